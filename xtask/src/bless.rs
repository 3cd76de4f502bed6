//! `cargo xtask bless`: refresh `testdata/golden/<stem>.rs` from `testdata/crds/<stem>.*`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::paths;

pub fn run() -> Result<ExitCode> {
    let crds = paths::testdata().join("crds");
    let golden_dir = paths::testdata().join("golden");
    std::fs::create_dir_all(&golden_dir)?;

    let mut by_stem = BTreeMap::new();
    for crd in paths::crd_files(&crds).with_context(|| format!("listing {}", crds.display()))? {
        if let Some(other) = by_stem.insert(paths::stem(&crd), crd.clone()) {
            bail!(
                "{} and {} would share one golden file",
                other.display(),
                crd.display()
            );
        }
    }

    let (mut added, mut updated, mut unchanged) = (0, 0, 0);
    let mut errors = 0;
    for (stem, crd) in &by_stem {
        let golden = golden_dir.join(format!("{stem}.rs"));
        let rendered = match kube_codegen::render_golden(crd) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("error  {}: {e}", crd.display());
                errors += 1;
                continue;
            }
        };
        let existed = golden.exists();
        if paths::write_if_changed(&golden, &rendered)? {
            println!(
                "{}  testdata/golden/{stem}.rs",
                if existed { "updated" } else { "added  " }
            );
            if existed { updated += 1 } else { added += 1 }
        } else {
            unchanged += 1;
        }
    }

    let mut removed = 0;
    for entry in std::fs::read_dir(&golden_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs") && !by_stem.contains_key(&paths::stem(&path))
        {
            std::fs::remove_file(&path)?;
            println!(
                "removed  testdata/golden/{}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            removed += 1;
        }
    }
    println!(
        "bless: {added} added, {updated} updated, {removed} removed, {unchanged} unchanged, {errors} errors"
    );
    Ok(if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

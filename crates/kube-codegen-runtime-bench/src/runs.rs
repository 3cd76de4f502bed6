//! One variant per process: resident-set figures only mean something in a process that has
//! not yet freed an earlier run's memory (the allocator keeps it), so a driver runs this same
//! binary once per variant and round, and gathers the `name value unit` lines they print.

use std::process::Command;

/// Every figure seen, in first-seen order, with its unit and one value per run.
#[derive(Default)]
pub struct Gathered(Vec<(String, String, Vec<f64>)>);

impl Gathered {
    /// Runs this binary with `args` (plus `--child`) and records its figures, echoing nothing.
    /// Lines starting with `#` are comments; anything else must be `name value unit`.
    pub fn run_child(&mut self, args: &[&str]) -> Result<(), String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding this binary: {e}"))?;
        let out = Command::new(exe)
            .args(args)
            .arg("--child")
            .output()
            .map_err(|e| format!("starting {args:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{args:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(name), Some(value), unit) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("{args:?} printed {line:?}, not `name value unit`"));
            };
            let value: f64 = value
                .parse()
                .map_err(|_| format!("{args:?} printed a non-number in {line:?}"))?;
            self.push(name, value, unit.unwrap_or(""));
        }
        Ok(())
    }

    /// Records one value of `name`.
    pub fn push(&mut self, name: &str, value: f64, unit: &str) {
        match self.0.iter_mut().find(|(n, ..)| n == name) {
            Some((_, _, values)) => values.push(value),
            None => self.0.push((name.to_owned(), unit.to_owned(), vec![value])),
        }
    }

    /// Records, per run, `ours / theirs` as `name` for each `(name, ours, theirs)` whose two
    /// figures were both gathered (same-round ratios: run i of one over run i of the other).
    pub fn push_ratios(&mut self, pairs: &[(&str, &str, &str)]) {
        for &(name, ours, theirs) in pairs {
            let (Some(a), Some(b)) = (self.values(ours), self.values(theirs)) else {
                continue;
            };
            let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
            for v in r {
                self.push(name, v, "x");
            }
        }
    }

    /// The values recorded for `name`, in run order.
    pub fn values(&self, name: &str) -> Option<&[f64]> {
        self.0
            .iter()
            .find(|(n, ..)| n == name)
            .map(|(_, _, v)| v.as_slice())
    }

    /// Each figure as `name median unit`, with its minimum and maximum over the runs as a
    /// trailing comment (a median alone hides a bimodal figure).
    pub fn print(&self) {
        for (name, unit, values) in &self.0 {
            let med = crate::measure::median(values.clone());
            let (lo, hi) = values
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            println!(
                "{name} {} {unit}  # min {} .. max {} over {} runs",
                fmt(med),
                fmt(lo),
                fmt(hi),
                values.len()
            );
        }
    }
}

/// A figure as printed: whole numbers from 1,000 up, four decimals below (CPU seconds and
/// ratios need them).
pub fn fmt(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

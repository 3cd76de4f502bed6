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
        let what = format!("{args:?}");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            self.push_line(line, &what)?;
        }
        Ok(())
    }

    /// Records a `name value unit` line that `what` printed.
    pub fn push_line(&mut self, line: &str, what: &str) -> Result<(), String> {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(value), unit) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("{what} printed {line:?}, not `name value unit`"));
        };
        let value: f64 = value
            .parse()
            .map_err(|_| format!("{what} printed a non-number in {line:?}"))?;
        self.push(name, value, unit.unwrap_or(""));
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

/// Whether `values` fall in two clusters: some split of the sorted values, with at least two on
/// each side, leaves a gap between the sides over twice the wider side's own spread and over
/// 5% of the median. Five runs can only show this coarsely; it flags figures whose median
/// would sit in one cluster by chance.
pub fn bimodal(values: &[f64]) -> bool {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n < 4 {
        return false;
    }
    let median = v[n / 2].abs();
    (2..=n - 2).any(|k| {
        let gap = v[k] - v[k - 1];
        let spread = (v[k - 1] - v[0]).max(v[n - 1] - v[k]);
        gap > 2.0 * spread && gap > 0.05 * median
    })
}

impl Gathered {
    /// [`print`](Self::print), with `bimodal` after the spread of every figure [`bimodal`]
    /// flags, then a line naming them all.
    pub fn print_marking_bimodal(&self) {
        let mut flagged = Vec::new();
        for (name, unit, values) in &self.0 {
            let med = crate::measure::median(values.clone());
            let (lo, hi) = values
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            let mark = if bimodal(values) {
                flagged.push(name.as_str());
                "  bimodal"
            } else {
                ""
            };
            println!(
                "{name} {} {unit}  # min {} .. max {} over {} runs{mark}",
                fmt(med),
                fmt(lo),
                fmt(hi),
                values.len()
            );
        }
        if flagged.is_empty() {
            println!("# bimodal figures: none");
        } else {
            println!("# bimodal figures: {}", flagged.join(", "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bimodal;

    #[test]
    fn two_clusters_are_bimodal_one_spread_is_not() {
        assert!(bimodal(&[10.0, 10.5, 20.0, 20.4, 10.2]));
        assert!(!bimodal(&[10.0, 11.0, 12.0, 13.0, 14.0]));
        assert!(!bimodal(&[10.0, 10.1, 10.2, 30.0, 10.3])); // one outlier is not a mode
        assert!(!bimodal(&[1.0, 2.0, 3.0]));
    }
}

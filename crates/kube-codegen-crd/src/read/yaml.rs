//! YAML streams read as kubectl reads them (sigs.k8s.io/yaml over go-yaml v2, YAML 1.1 rules):
//! `0644` is octal (420), `yes`/`no`/`on`/`off` are booleans, `~` is null, timestamps stay
//! strings, and `.inf`/`.nan` are refused because kubectl cannot send them as JSON.

use std::path::Path;

use super::value::TopValue;
use crate::Error;

/// Nesting limit for YAML input; serde-saphyr's default (64) is too low for deep real-world CRDs
/// (a nested pod template easily goes past it), while 256 still protects the stack.
pub const MAX_DEPTH: usize = 256;

fn options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    options.budget = Some(budget);
    // Comments are never read. Not emitting them also lifts the parser's limit on comments
    // buffered during look-ahead, which a long run of comment lines would otherwise hit.
    options.emit_comments = false;
    // YAML 1.1, as go-yaml v2 resolves plain scalars.
    options.legacy_octal_numbers = true;
    options.strict_booleans = false;
    // Non-finite numbers reach our visitor, which refuses them in kubectl's words.
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    // kubectl keeps the last of duplicate keys (`{x: 1, x: 2}` sends `x: 2`), without a word.
    // Every entry reaches our visitor, which keeps the last value too, under the key's JSON
    // spelling (so `yes:` and `on:` are one key, as they are to kubectl), and records each repeat
    // with its place for a warning.
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    options
}

/// Every document of a YAML stream, as the JSON kubectl would send, with the keys repeated in it.
pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<TopValue>, Error> {
    serde_saphyr::from_multiple_with_options::<TopValue>(text, options()).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((0, 0));
        // The rendered message repeats a snippet; the first line is the cause.
        let message = e.to_string();
        let message = message.lines().next().unwrap_or("invalid YAML").to_string();
        Error::Syntax {
            file: path.to_path_buf(),
            line,
            column,
            message,
        }
    })
}

//! A fast reader for the plain block-style YAML that CRD generators write (controller-gen, kubebuilder,
//! Helm-rendered files): block mappings and sequences, plain, quoted and literal (`|`) scalars, and
//! flow collections. Anything outside that subset, or anything unusual inside it (anchors, tags,
//! folded scalars, duplicate keys, tabs, odd escapes, scalars whose type needs YAML's full rules,
//! inputs near a resource budget), makes [`parse`] return `None`, and the caller reads the text
//! with serde-saphyr instead: that path alone decides errors, limits and every unusual case.
//!
//! Why: serde-saphyr through serde's generic `Value` visitor spends most of the generator's time
//! on the corpus; this reader builds the same `serde_json::Value` directly, several times faster.
//! "The same" is the contract: for every input it accepts, the result equals serde-saphyr's
//! (checked against every file of `testdata/` and of the public corpus when present).

use serde_json::map::Entry;
use serde_json::{Map, Value};

/// Nesting at which we give up (serde-saphyr's own budget is 256).
const MAX_DEPTH: usize = 200;
/// Nodes and documents kept well under serde-saphyr's budgets (250 000 nodes, 1 024 documents),
/// so any input near a limit goes through serde-saphyr and gets its exact verdict.
const MAX_NODES: usize = 150_000;
const MAX_DOCS: usize = 512;
const MAX_BYTES: usize = 16 << 20;
/// Simple keys longer than this go to serde-saphyr (its look-ahead limit is 1 024 characters).
const MAX_KEY: usize = 512;

/// The documents of `text`, or `None` when the text is outside the subset (see the module docs).
pub fn parse(text: &str) -> Option<Vec<Value>> {
    if text.len() > MAX_BYTES || !printable(text) {
        return None;
    }
    Reader::new(text).stream()
}

#[cfg(test)]
fn stop_line(text: &str) -> usize {
    let mut p = Reader::new(text);
    let _ = p.stream();
    text[..p.pos].lines().count()
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        Reader {
            s: text.as_bytes(),
            text,
            pos: 0,
            ls: 0,
            nodes: 0,
            depth: 0,
        }
    }

    fn stream(&mut self) -> Option<Vec<Value>> {
        let p = self;
        let mut docs = Vec::new();
        loop {
            p.skip_blank_lines();
            if p.eof() {
                break;
            }
            if p.marker(b"---") {
                // Empty documents are skipped, as serde-saphyr does.
                p.pos += 3;
                p.end_of_line()?;
                continue;
            }
            if p.marker(b"...") || p.indent() != 0 {
                return None;
            }
            let v = p.content_at(-1, 0)?;
            if !(v.is_object() || v.is_array()) {
                return None;
            }
            docs.push(v);
            if docs.len() > MAX_DOCS {
                return None;
            }
            p.skip_blank_lines();
            if !p.eof() && !p.marker(b"---") {
                return None;
            }
        }
        (!docs.is_empty()).then_some(docs)
    }
}

/// Only characters both readers treat alike: no tabs, carriage returns, controls, BOM or
/// Unicode line separators (serde-saphyr rejects or reinterprets some of them).
fn printable(text: &str) -> bool {
    // Branch-free per chunk, so the compiler vectorises it.
    let bad = |chunk: &[u8]| {
        chunk.iter().fold(false, |acc, &b| {
            acc | ((b < 0x20) & (b != b'\n')) | (b == 0x7f)
        })
    };
    if text.as_bytes().chunks(4096).any(bad) {
        return false;
    }
    text.is_ascii()
        || !text.chars().any(|c| {
            matches!(
                c,
                '\u{80}'
                    ..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
            )
        })
}

#[derive(Clone, Copy)]
struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    /// Start of the line holding `pos`.
    ls: usize,
    nodes: usize,
    depth: usize,
}

fn is_break_or_end(b: Option<u8>) -> bool {
    matches!(b, None | Some(b'\n'))
}

fn is_blank_or_end(b: Option<u8>) -> bool {
    matches!(b, None | Some(b'\n' | b' '))
}

impl<'a> Reader<'a> {
    fn eof(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied()
    }
    fn peek(&self) -> Option<u8> {
        self.at(self.pos)
    }
    fn col(&self) -> usize {
        self.pos - self.ls
    }
    /// Moves past the line break at `pos` (or stays at the end).
    fn newline(&mut self) {
        if self.peek() == Some(b'\n') {
            self.pos += 1;
            self.ls = self.pos;
        }
    }
    fn spaces_from(&self, i: usize) -> usize {
        self.s[i.min(self.s.len())..]
            .iter()
            .take_while(|&&b| b == b' ')
            .count()
    }
    /// Indentation of the line starting at `pos`.
    fn indent(&self) -> usize {
        self.spaces_from(self.pos)
    }
    /// A document marker at the start of the current line.
    fn marker(&self, m: &[u8]) -> bool {
        self.pos == self.ls
            && self.s[self.pos..].starts_with(m)
            && is_blank_or_end(self.at(self.pos + 3))
    }
    fn skip_to_break(&mut self) {
        self.pos = match self.text[self.pos..].find('\n') {
            Some(i) => self.pos + i,
            None => self.s.len(),
        };
    }
    /// From a line start, skips empty and comment-only lines; stays at the start of the next
    /// content line (or the end).
    fn skip_blank_lines(&mut self) {
        loop {
            let i = self.pos + self.indent();
            match self.at(i) {
                None => {
                    self.pos = self.s.len();
                    return;
                }
                Some(b'\n') => {
                    self.pos = i;
                    self.newline();
                }
                Some(b'#') => {
                    self.pos = i;
                    self.skip_to_break();
                    self.newline();
                }
                Some(_) => return,
            }
        }
    }
    /// After a complete node on this line: spaces, an optional comment, then the line break.
    fn end_of_line(&mut self) -> Option<()> {
        let n = self.spaces_from(self.pos);
        self.pos += n;
        match self.peek() {
            None => Some(()),
            Some(b'\n') => {
                self.newline();
                Some(())
            }
            Some(b'#') if n > 0 => {
                self.skip_to_break();
                self.newline();
                Some(())
            }
            _ => None,
        }
    }
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.nodes += 1;
        (self.depth <= MAX_DEPTH && self.nodes <= MAX_NODES).then_some(())
    }
    fn leaf(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= MAX_NODES).then_some(())
    }

    /// A node starting at `pos`, which is column `col` (the node's own indentation); `parent` is
    /// the indentation of the enclosing collection.
    fn content_at(&mut self, parent: isize, col: usize) -> Option<Value> {
        if self.peek() == Some(b'-') && is_blank_or_end(self.at(self.pos + 1)) {
            return self.block_seq(col);
        }
        match self.scan_key()? {
            Some(_) => self.block_map(col),
            None if parent < 0 => None,
            None => self.inline_value(parent as usize),
        }
    }

    /// `Some(Some((key, after_colon)))` when `pos` starts a simple key, `Some(None)` when it starts
    /// something else, `None` for a key outside the subset. Does not move.
    fn scan_key(&self) -> Option<Option<(String, usize)>> {
        let start = self.pos;
        let first = self.peek()?;
        let (key, end) = match first {
            b'"' | b'\'' => {
                let mut probe = *self;
                let Some(key) = probe.quoted_single_line() else {
                    return Some(None);
                };
                let end = probe.pos + probe.spaces_from(probe.pos);
                if end - start > MAX_KEY {
                    return None;
                }
                (key, end)
            }
            _ => {
                if !plain_start(self.s, start, false) {
                    return Some(None);
                }
                let mut i = start;
                loop {
                    match self.at(i) {
                        None | Some(b'\n') => return Some(None),
                        Some(b':') if is_blank_or_end(self.at(i + 1)) => break,
                        Some(b'#') if self.s[i - 1] == b' ' => return Some(None),
                        _ => i += 1,
                    }
                }
                let raw = self.text[start..i].trim_end_matches(' ');
                if i - start > MAX_KEY || matches!(raw, "" | "~" | "null" | "Null" | "NULL" | "<<")
                {
                    return None;
                }
                (raw.to_string(), i)
            }
        };
        if self.at(end) == Some(b':') && is_blank_or_end(self.at(end + 1)) {
            Some(Some((key, end + 1)))
        } else {
            Some(None)
        }
    }

    fn block_map(&mut self, n: usize) -> Option<Value> {
        self.enter()?;
        let mut map = Map::new();
        loop {
            let (key, after) = self.scan_key()??;
            self.leaf()?;
            self.pos = after;
            let value = self.value_after(n, false)?;
            match map.entry(key) {
                Entry::Vacant(e) => {
                    e.insert(value);
                }
                Entry::Occupied(_) => return None,
            }
            if !self.next_entry_at(n)? {
                break;
            }
            self.pos += n;
        }
        self.depth -= 1;
        Some(Value::Object(map))
    }

    /// After an entry of a block collection at indent `n`: whether another line at that indent
    /// follows (`Some(false)`: the collection ends; `None`: a deeper line, outside the subset).
    fn next_entry_at(&mut self, n: usize) -> Option<bool> {
        self.skip_blank_lines();
        if self.eof() {
            return Some(false);
        }
        let i = self.indent();
        if i < n || (n == 0 && (self.marker(b"---") || self.marker(b"..."))) {
            return Some(false);
        }
        if i > n {
            return None;
        }
        Some(true)
    }

    fn block_seq(&mut self, n: usize) -> Option<Value> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            self.pos += 1; // the `-`
            items.push(self.value_after(n, true)?);
            if !self.next_entry_at(n)? {
                break;
            }
            let dash = self.pos + n;
            if self.at(dash) != Some(b'-') || !is_blank_or_end(self.at(dash + 1)) {
                // Back to the enclosing mapping (a compact sequence ends at its next key).
                break;
            }
            self.pos = dash;
        }
        self.depth -= 1;
        Some(Value::Array(items))
    }

    /// The value after a mapping's `:` (`seq` false) or a sequence's `-` (`seq` true); `n` is the
    /// indentation of that mapping or `-`. Ends at a line start.
    fn value_after(&mut self, n: usize, seq: bool) -> Option<Value> {
        let k = self.spaces_from(self.pos);
        self.pos += k;
        match self.peek() {
            None | Some(b'\n' | b'#') => {
                if self.peek() == Some(b'#') {
                    self.skip_to_break();
                }
                self.newline();
                self.skip_blank_lines();
                if self.eof() {
                    self.leaf()?;
                    return Some(Value::Null);
                }
                let i = self.indent();
                if i > n {
                    self.pos += i;
                    return self.content_at(n as isize, i);
                }
                let dash = self.pos + n;
                if i == n
                    && !seq
                    && self.at(dash) == Some(b'-')
                    && is_blank_or_end(self.at(dash + 1))
                    && !(n == 0 && self.marker(b"---"))
                {
                    self.pos = dash;
                    return self.block_seq(n);
                }
                self.leaf()?;
                Some(Value::Null)
            }
            Some(_) if seq => {
                let col = self.col();
                self.content_at(n as isize, col)
            }
            Some(_) => self.inline_value(n),
        }
    }

    /// A scalar or flow collection at `pos` in block context; `n` is the parent's indentation.
    fn inline_value(&mut self, n: usize) -> Option<Value> {
        self.leaf()?;
        match self.peek()? {
            b'|' | b'>' => self.block_scalar(n).map(Value::String),
            b'"' | b'\'' => {
                let s = self.quoted(n)?;
                self.end_of_line()?;
                Some(Value::String(s))
            }
            b'[' | b'{' => {
                self.nodes -= 1;
                let v = self.flow(n)?;
                self.end_of_line()?;
                Some(v)
            }
            _ if !plain_start(self.s, self.pos, false) => None,
            _ => self.plain_block(n),
        }
    }

    /// One line of a plain scalar from `pos`: its end (trailing spaces trimmed) and whether a
    /// comment follows. `None` for text that makes this line a key or otherwise out of subset.
    fn plain_line(&self) -> Option<(usize, usize, bool)> {
        let mut i = self.pos;
        let mut comment = false;
        loop {
            match self.at(i) {
                None | Some(b'\n') => break,
                Some(b':') if is_blank_or_end(self.at(i + 1)) => return None,
                Some(b'#') if self.s[i - 1] == b' ' => {
                    comment = true;
                    break;
                }
                _ => i += 1,
            }
        }
        let mut end = i;
        while end > self.pos && self.s[end - 1] == b' ' {
            end -= 1;
        }
        Some((end, i, comment))
    }

    fn plain_block(&mut self, n: usize) -> Option<Value> {
        let start = self.pos;
        let (end, stop, comment) = self.plain_line()?;
        if comment {
            self.skip_to_break();
        } else {
            self.pos = stop;
        }
        self.newline();
        if comment {
            return resolve(&self.text[start..end], false);
        }
        let mut folded: Option<String> = None;
        loop {
            let (save_pos, save_ls) = (self.pos, self.ls);
            let mut empty = 0;
            let i = loop {
                let i = self.indent();
                if self.at(self.pos + i) == Some(b'\n') {
                    empty += 1;
                    self.pos += i;
                    self.newline();
                    continue;
                }
                break i;
            };
            if matches!(self.at(self.pos + i), None | Some(b'#')) || i <= n {
                (self.pos, self.ls) = (save_pos, save_ls);
                break;
            }
            self.pos += i;
            let seg_start = self.pos;
            let (seg_end, stop, comment) = self.plain_line()?;
            if comment {
                return None;
            }
            let text = folded.get_or_insert_with(|| self.text[start..end].to_string());
            if empty == 0 {
                text.push(' ');
            } else {
                text.extend(std::iter::repeat_n('\n', empty));
            }
            text.push_str(&self.text[seg_start..seg_end]);
            self.pos = stop;
            self.newline();
        }
        match folded {
            None => resolve(&self.text[start..end], false),
            Some(s) => resolve(&s, true),
        }
    }

    /// A `|`, `|-`, `>` or `>-` scalar; `n` is the parent's indentation. Ends at a line start.
    fn block_scalar(&mut self, n: usize) -> Option<String> {
        let fold = self.peek() == Some(b'>');
        self.pos += 1;
        let strip = match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b' ' | b'\n') | None => false,
            _ => return None, // keep (`+`) and explicit indentation go to serde-saphyr
        };
        self.end_of_line()?;
        // Leading empty lines, then the first content line fixes the indentation.
        let mut out = String::new();
        let mut max_leading = 0;
        let ci = loop {
            if self.eof() {
                return out.is_empty().then(String::new);
            }
            let i = self.indent();
            if self.at(self.pos + i).is_none() {
                return out.is_empty().then(String::new);
            }
            if self.at(self.pos + i) == Some(b'\n') {
                max_leading = max_leading.max(i);
                out.push('\n');
                self.pos += i;
                self.newline();
                continue;
            }
            break i;
        };
        if ci <= n {
            // No content: the scalar is empty, and the lines seen belong to what follows.
            return out.is_empty().then(String::new);
        }
        if max_leading > ci || (fold && !out.is_empty()) {
            return None;
        }
        // Empty lines not yet known to be inside the scalar, and whether the previous content
        // line was more indented (folding keeps the breaks around those).
        let mut pending = 0;
        let mut prev_more: Option<bool> = None;
        loop {
            if self.eof() {
                break;
            }
            let i = self.indent();
            match self.at(self.pos + i) {
                Some(b'\n') | None => {
                    if i > ci {
                        return None;
                    }
                    pending += 1;
                    self.pos += i;
                    self.newline();
                    continue;
                }
                _ if i < ci => break,
                _ => {}
            }
            let more = i > ci;
            if let Some(prev) = prev_more {
                if fold && !prev && !more && pending == 0 {
                    out.push(' ');
                } else {
                    let breaks = if fold && !prev && !more {
                        pending
                    } else {
                        pending + 1
                    };
                    out.extend(std::iter::repeat_n('\n', breaks));
                }
            }
            prev_more = Some(more);
            pending = 0;
            let start = self.pos + ci;
            self.skip_to_break();
            out.push_str(&self.text[start..self.pos]);
            self.newline();
        }
        if !strip && prev_more.is_some() {
            out.push('\n');
        }
        Some(out)
    }

    /// A quoted scalar that ends on its own line (for keys); `None` if it doesn't.
    fn quoted_single_line(&mut self) -> Option<String> {
        let q = self.peek()?;
        let end = self.text[self.pos..]
            .find('\n')
            .map_or(self.s.len(), |i| self.pos + i);
        let line = &self.s[self.pos + 1..end];
        if !line.contains(&q) {
            return None;
        }
        self.quoted(usize::MAX)
    }

    /// A single- or double-quoted scalar at `pos`; continuation lines must be indented more than
    /// `n` (`usize::MAX`: no continuation lines allowed).
    fn quoted(&mut self, n: usize) -> Option<String> {
        let q = self.peek()?;
        self.pos += 1;
        let mut out = String::new();
        // Folding trims trailing spaces, but never those written by an escape.
        let mut kept = 0;
        loop {
            // Copy the run of ordinary characters in one go.
            let run = self.s[self.pos..]
                .iter()
                .position(|&b| b == q || b == b'\n' || (q == b'"' && b == b'\\'))
                .map(|i| self.pos + i)?;
            out.push_str(&self.text[self.pos..run]);
            self.pos = run;
            match self.s[run] {
                b'\'' if q == b'\'' => {
                    if self.at(run + 1) == Some(b'\'') {
                        out.push('\'');
                        self.pos += 2;
                    } else {
                        self.pos += 1;
                        return Some(out);
                    }
                }
                b'"' => {
                    self.pos += 1;
                    return Some(out);
                }
                b'\\' if self.at(run + 1) == Some(b'\n') => {
                    // An escaped line break joins the lines without a space.
                    if n == usize::MAX {
                        return None;
                    }
                    self.pos += 1;
                    self.newline();
                    let empty = self.continuation(n)?;
                    out.extend(std::iter::repeat_n('\n', empty));
                    kept = out.len();
                }
                b'\\' => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                    kept = out.len();
                }
                _ => {
                    // Line folding: trailing spaces go, empty lines become `\n`, else a space.
                    if n == usize::MAX {
                        return None;
                    }
                    let trimmed = out.trim_end_matches(' ').len().max(kept);
                    out.truncate(trimmed);
                    self.newline();
                    let empty = self.continuation(n)?;
                    if empty == 0 {
                        out.push(' ');
                    } else {
                        out.extend(std::iter::repeat_n('\n', empty));
                    }
                }
            }
        }
    }

    /// After a line break inside a quoted scalar: skips empty lines (returning how many) and the
    /// next line's indentation, which must be more than `n`.
    fn continuation(&mut self, n: usize) -> Option<usize> {
        let mut empty = 0;
        loop {
            let i = self.indent();
            match self.at(self.pos + i) {
                None => return None,
                Some(b'\n') => {
                    empty += 1;
                    self.pos += i;
                    self.newline();
                }
                _ if i <= n => return None,
                _ => {
                    self.pos += i;
                    return Some(empty);
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Option<()> {
        let c = self.peek()?;
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b' ' => ' ',
            b'\\' => '\\',
            b'/' => '/',
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'0' => '\0',
            b'a' => '\u{7}',
            b'b' => '\u{8}',
            b'e' => '\u{1b}',
            b'f' => '\u{c}',
            b'v' => '\u{b}',
            b'x' => self.hex(2)?,
            b'u' => self.hex(4)?,
            b'U' => self.hex(8)?,
            _ => return None,
        };
        out.push(ch);
        Some(())
    }

    fn hex(&mut self, digits: usize) -> Option<char> {
        let h = self.text.get(self.pos..self.pos + digits)?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += digits;
        char::from_u32(u32::from_str_radix(h, 16).ok()?)
    }

    /// Spaces, line breaks and comments inside a flow collection; new lines must be indented
    /// more than `n`.
    fn flow_space(&mut self, n: usize) -> Option<()> {
        loop {
            let k = self.spaces_from(self.pos);
            match self.at(self.pos + k) {
                Some(b'\n') => {
                    self.pos += k;
                    self.newline();
                    let i = self.indent();
                    if i <= n && !is_break_or_end(self.at(self.pos + i)) {
                        return None;
                    }
                }
                Some(b'#') if k > 0 || self.pos == self.ls => {
                    self.pos += k;
                    self.skip_to_break();
                }
                None => return None,
                _ => {
                    self.pos += k;
                    return Some(());
                }
            }
        }
    }

    /// After an element of a flow collection: whether a `,` announces another one (`Some(false)`
    /// at the closing bracket, which is left for the caller; `None` at anything else).
    fn flow_more(&mut self, n: usize, close: u8) -> Option<bool> {
        self.flow_space(n)?;
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Some(true)
            }
            c if c == close => Some(false),
            _ => None,
        }
    }

    fn flow(&mut self, n: usize) -> Option<Value> {
        self.enter()?;
        let close = if self.peek()? == b'[' { b']' } else { b'}' };
        self.pos += 1;
        let v = if close == b']' {
            let mut items = Vec::new();
            loop {
                self.flow_space(n)?;
                if self.peek()? == b']' {
                    break;
                }
                items.push(self.flow_node(n)?);
                if !self.flow_more(n, b']')? {
                    break;
                }
            }
            Value::Array(items)
        } else {
            let mut map = Map::new();
            loop {
                self.flow_space(n)?;
                if self.peek()? == b'}' {
                    break;
                }
                self.leaf()?;
                let key = match self.peek()? {
                    b'"' | b'\'' => self.quoted(n)?,
                    _ => match self.flow_plain()? {
                        Value::String(s) => s,
                        _ => return None,
                    },
                };
                self.flow_space(n)?;
                if self.peek()? != b':' {
                    return None;
                }
                self.pos += 1;
                self.flow_space(n)?;
                if matches!(self.peek()?, b',' | b'}') {
                    return None;
                }
                let value = self.flow_node(n)?;
                match map.entry(key) {
                    Entry::Vacant(e) => {
                        e.insert(value);
                    }
                    Entry::Occupied(_) => return None,
                }
                if !self.flow_more(n, b'}')? {
                    break;
                }
            }
            Value::Object(map)
        };
        self.pos += 1; // the closing bracket
        self.depth -= 1;
        Some(v)
    }

    fn flow_node(&mut self, n: usize) -> Option<Value> {
        match self.peek()? {
            b'[' | b'{' => self.flow(n),
            b'"' | b'\'' => {
                self.leaf()?;
                self.quoted(n).map(Value::String)
            }
            _ => {
                self.leaf()?;
                self.flow_plain()
            }
        }
    }

    /// A one-line plain scalar inside a flow collection.
    fn flow_plain(&mut self) -> Option<Value> {
        if !plain_start(self.s, self.pos, true) {
            return None;
        }
        let start = self.pos;
        let mut i = start;
        loop {
            match self.at(i) {
                None | Some(b'\n' | b',' | b'[' | b']' | b'{' | b'}') => break,
                Some(b':')
                    if matches!(
                        self.at(i + 1),
                        None | Some(b' ' | b'\n' | b',' | b'[' | b']' | b'{' | b'}')
                    ) =>
                {
                    break;
                }
                Some(b'#') if self.s[i - 1] == b' ' => break,
                _ => i += 1,
            }
        }
        let mut end = i;
        while end > start && self.s[end - 1] == b' ' {
            end -= 1;
        }
        self.pos = i;
        // A plain scalar continued on the next line is left to serde-saphyr.
        if self.peek() == Some(b'\n') {
            let next = self.s[i..].iter().find(|&&b| b != b' ' && b != b'\n');
            if !matches!(next, Some(b',' | b']' | b'}')) {
                return None;
            }
        }
        resolve(&self.text[start..end], false)
    }
}

/// Whether a plain scalar may start at `i` (YAML's indicator rules; flow context is stricter).
fn plain_start(s: &[u8], i: usize, flow: bool) -> bool {
    let Some(&b) = s.get(i) else { return false };
    match b {
        b'-' | b'?' | b':' => {
            let next = s.get(i + 1).copied();
            !(is_blank_or_end(next)
                || (flow && matches!(next, Some(b',' | b'[' | b']' | b'{' | b'}'))))
        }
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' | b' ' | b'\n' => false,
        _ => true,
    }
}

/// The value of a plain scalar as serde-saphyr types it for an untyped target: null, booleans
/// and plain decimal integers here; anything else that might not be a string (a leading digit,
/// sign or dot, YAML 1.1 boolean words) is asked of serde-saphyr itself.
fn resolve(s: &str, multiline: bool) -> Option<Value> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let b = s.as_bytes();
    let digits = |d: &[u8]| {
        !d.is_empty()
            && d.len() <= 18
            && d.iter().all(u8::is_ascii_digit)
            && (d[0] != b'0' || d.len() == 1)
    };
    if digits(b) {
        return s.parse::<u64>().ok().map(Value::from);
    }
    if b[0] == b'-' && b.len() > 1 && b[1] != b'0' && digits(&b[1..]) {
        return s.parse::<i64>().ok().map(Value::from);
    }
    let special = matches!(b[0], b'0'..=b'9' | b'+' | b'-' | b'.')
        || [
            "y", "yes", "n", "no", "on", "off", "true", "false", "null", "inf", "infinity", "nan",
        ]
        .iter()
        .any(|w| s.eq_ignore_ascii_case(w));
    if !special {
        return Some(Value::String(s.to_string()));
    }
    if multiline {
        return None;
    }
    // As a mapping value, where a plain scalar reads as it does here (a bare `...` would end
    // the document).
    let mut doc = serde_saphyr::from_str::<Value>(&format!("k: {s}")).ok()?;
    doc.get_mut("k").map(Value::take)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::parse;
    use crate::crd::load::saphyr_yaml;

    /// `true` when the fast reader accepted `text`; then serde-saphyr must read the same values.
    fn agrees(text: &str) -> bool {
        match parse(text) {
            None => false,
            Some(fast) => {
                match saphyr_yaml(Path::new("t.yaml"), text) {
                    Ok(slow) => assert_eq!(fast, slow, "{text:?}"),
                    Err(e) => panic!("accepted what serde-saphyr rejects ({e}): {text:?}"),
                }
                true
            }
        }
    }

    #[test]
    fn reads_the_common_forms() {
        for text in [
            "a: 1\nb: -2\nc: x\nd: \"q\\\"\\n\\x41\\u00e9\"\ne: 'it''s'\nf:\ng: ~\nh: yes\ni: 1.5\nj: true\n",
            "k:\n- a\n- b: 1\n  c: [1, x, 'y', {z: 2}]\n- - nested\n  - again\n",
            "d: |\n  line 1\n\n    more\n  last\ne: |-\n  x\nf: >-\n  folded\n  text\n\n  para\n    kept\n  end\n",
            "p: plain\n  continued\n\n  after empty\nq: \"dq\n  folded \\\n  joined\\ \"\n",
            "---\na: 1\n---\n---\nb: 2 # comment\n# tail\n",
            "m: {}\nn: []\no: {\"json\": \"style\",\n  \"x\": [1,\n    2]}\n",
            "s: ...\nt: ---x\nu: 0x1F\nv: 007\nw: +1\nx: .nan_text\ny: 1e3\nz: -0\n",
        ] {
            assert!(agrees(text), "left to serde-saphyr: {text:?}");
        }
    }

    /// A small deterministic generator (xorshift), so the property test below can build YAML-ish
    /// text and mutate it from one seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len())]
        }
    }

    const SCALARS: &[&str] = &[
        "a",
        "x y",
        "1",
        "-3",
        "0",
        "007",
        "1.5",
        "yes",
        "No",
        "on",
        "null",
        "~",
        "true",
        "FALSE",
        "''",
        "'a''b'",
        "\"q\"",
        "\"e\\n\\t\\\"\"",
        "\"\\ \"",
        "a:b",
        "a #c",
        "http://x/y",
        "...",
        "---",
        "-x",
        ".5",
        "+1",
        "[1, 2]",
        "{a: b}",
        "[]",
        "{}",
        "|",
        "|-",
        ">",
        ">-",
        "*a",
        "&a b",
        "!t x",
        "\"multi\n  line\"",
        "'multi\n\n  line'",
        "\"x\\\n  y\"",
        "é",
        "a\\b",
    ];

    fn node(r: &mut Rng, out: &mut String, indent: usize, depth: usize) {
        let pad = " ".repeat(indent);
        match if depth > 3 { 2 } else { r.below(3) } {
            0 => {
                for _ in 0..1 + r.below(3) {
                    let key = r.pick(&["a", "b", "k", "\"q\"", "'s'", "1", "x y", "-", "a:"]);
                    out.push_str(&format!("{pad}{key}:"));
                    value(r, out, indent, depth);
                }
            }
            1 => {
                for _ in 0..1 + r.below(3) {
                    out.push_str(&format!("{pad}-"));
                    value(r, out, indent, depth);
                }
            }
            _ => {
                let s = r.pick(SCALARS);
                out.push_str(&format!("{pad}k: {s}\n"));
            }
        }
    }

    fn value(r: &mut Rng, out: &mut String, indent: usize, depth: usize) {
        match r.below(5) {
            0 | 1 => {
                let s = r.pick(SCALARS);
                out.push_str(&format!(" {s}\n"));
                if s.starts_with(['|', '>']) {
                    for _ in 0..r.below(4) {
                        let extra = r.below(3);
                        let line = r.pick(&["text", "", "  more", "# not a comment", "a: b"]);
                        out.push_str(&format!("{}{line}\n", " ".repeat(indent + 2 + extra)));
                    }
                }
            }
            2 => {
                out.push('\n');
                let deeper = indent + 1 + r.below(3);
                node(r, out, deeper, depth + 1);
            }
            3 => {
                out.push_str(&format!(" {}\n", r.pick(&["# c", "", "plain", "\"dq\""])));
                out.push_str(&format!(
                    "{}{}\n",
                    " ".repeat(indent + r.below(4)),
                    r.pick(&["cont", "- i", "x: 1", "# c"])
                ));
            }
            _ => {
                out.push('\n');
                node(r, out, indent, depth + 1);
            }
        }
    }

    const BITS: &[&str] = &[
        " ", "\n", ":", "-", "#", "\"", "'", "|", ">", "[", "]", "{", "}", ",", "\\", "a", "1",
        "  ", "---\n", "\t", "&", "*", "!", "?", "\n  ",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Generated and then mutated YAML-like text: whenever the fast reader accepts it,
        /// serde-saphyr accepts it too, with the same values.
        #[test]
        fn never_disagrees_with_serde_saphyr(seed in 1u64.., mutations in 0usize..7) {
            let mut r = Rng(seed);
            let mut text = String::new();
            node(&mut r, &mut text, 0, 0);
            for _ in 0..mutations {
                let mut at = r.below(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                if r.below(2) == 0 && at < text.len() {
                    let mut end = at + 1;
                    while !text.is_char_boundary(end) {
                        end += 1;
                    }
                    text.replace_range(at..end, "");
                } else {
                    text.insert_str(at, r.pick(BITS));
                }
            }
            agrees(&text);
        }
    }

    fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                yaml_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                out.push(p);
            }
        }
    }

    /// Every YAML file of the repository's test data, and of the public corpus when it is beside
    /// the repository, reads the same both ways (or is left to serde-saphyr).
    #[test]
    fn agrees_with_serde_saphyr_on_real_files() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        yaml_files(&root.join("testdata"), &mut files);
        yaml_files(&root.join("../shared/corpus/public"), &mut files);
        let mut fast = 0;
        let mut fallback = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let Some(docs) = parse(&text) else {
                fallback.push(format!("{}:{}", f.display(), super::stop_line(&text)));
                continue;
            };
            fast += 1;
            match saphyr_yaml(f, &text) {
                Ok(slow) => {
                    assert!(docs == slow, "{} differs", f.display())
                }
                Err(e) => panic!(
                    "{}: fast reader accepted what serde-saphyr rejects: {e}",
                    f.display()
                ),
            }
        }
        eprintln!(
            "fast {fast}, left to serde-saphyr {}: {fallback:#?}",
            fallback.len()
        );
        assert!(fast > 0);
    }
}

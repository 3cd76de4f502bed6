//! A syntax-only checker for CEL (Common Expression Language), the language of
//! `x-kubernetes-validations` rules: the grammar of cel-go's `CEL.g4` (operators, literals with
//! strings, raw strings, bytes and triple quotes, lists, maps, messages, member and index access,
//! calls, the optional `.?`/`[?` syntax) plus the parse-time checks of cel-go's parser (reserved
//! identifiers, macro arguments, integer ranges, recursion limit). Nothing is type-checked or
//! evaluated. Errors read like cel-go's: `ERROR: <input>:1:9: Syntax error: ...` with the source
//! line and a caret under the column.

use crate::cel_words::RESERVED;

/// Nesting deeper than this is refused, like cel-go's recursion limit.
pub(crate) const MAX_RECURSION_DEPTH: usize = 250;

const OPERAND_SET: &str = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";

/// The reserved words cel-go's lexer makes tokens of (`IN`, `CEL_TRUE`, `CEL_FALSE`, `NUL` in
/// `CEL.g4`): they cannot follow a `.`, so `self.in` is a syntax error. The other reserved words
/// lex as `IDENTIFIER` and are refused only as variables (`reservedIds` in cel-go's
/// `parser/parser.go`), so `self.return` selects a field.
const TOKEN_KEYWORDS: &[&str] = &["in", "true", "false", "null"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tk {
    Punct,
    Ident,
    EscIdent,
    Int,
    Uint,
    Float,
    Str,
    Bytes,
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Tk,
    /// byte range in the source
    start: usize,
    end: usize,
}

/// What a successful parse found out.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// `oldSelf` is referenced.
    pub uses_old_self: bool,
    /// Tokens in the expression: a bound on its syntax tree's height.
    pub tokens: usize,
}

struct SyntaxError {
    offset: usize,
    msg: String,
    /// ANTLR recovers from this error and cel-go reports what it meets after it too (see
    /// [`parse`]).
    recovers: bool,
}

fn lex(src: &str) -> Result<Vec<Token>, SyntaxError> {
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    let err = |start: usize, end: usize| SyntaxError {
        offset: start,
        msg: format!(
            "Syntax error: token recognition error at: '{}'",
            &src[start..end.min(src.len())]
        ),
        recovers: false,
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0c => {
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'0'..=b'9' => {
                let start = i;
                let kind;
                if c == b'0'
                    && matches!(b.get(i + 1), Some(b'x' | b'X'))
                    && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
                {
                    i += 2;
                    while i < b.len() && b[i].is_ascii_hexdigit() {
                        i += 1;
                    }
                    if matches!(b.get(i), Some(b'u' | b'U')) {
                        i += 1;
                        kind = Tk::Uint;
                    } else {
                        kind = Tk::Int;
                    }
                } else {
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    let mut float = false;
                    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                        i += 1;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                        float = true;
                    }
                    if let Some(n) = exponent_len(&b[i..]) {
                        i += n;
                        float = true;
                    }
                    if float {
                        kind = Tk::Float;
                    } else if matches!(b.get(i), Some(b'u' | b'U')) {
                        i += 1;
                        kind = Tk::Uint;
                    } else {
                        kind = Tk::Int;
                    }
                }
                toks.push(Token {
                    kind,
                    start,
                    end: i,
                });
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if let Some(n) = exponent_len(&b[i..]) {
                    i += n;
                }
                toks.push(Token {
                    kind: Tk::Float,
                    start,
                    end: i,
                });
            }
            b'"' | b'\'' => {
                let start = i;
                i = lex_string(src, i, false).map_err(|e| err(start, e))?;
                toks.push(Token {
                    kind: Tk::Str,
                    start,
                    end: i,
                });
            }
            b'`' => {
                let start = i;
                i += 1;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || matches!(b[i], b'_' | b'.' | b'-' | b'/' | b' '))
                {
                    i += 1;
                }
                if b.get(i) != Some(&b'`') || i == start + 1 {
                    return Err(err(start, i + 1));
                }
                i += 1;
                toks.push(Token {
                    kind: Tk::EscIdent,
                    start,
                    end: i,
                });
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                // string prefixes: b, r, br, bR, B...
                let lower = c.to_ascii_lowercase();
                let quote_at = |j: usize| matches!(b.get(j), Some(b'"' | b'\''));
                if lower == b'r' && quote_at(i + 1) {
                    i = lex_string(src, i + 1, true).map_err(|e| err(start, e))?;
                    toks.push(Token {
                        kind: Tk::Str,
                        start,
                        end: i,
                    });
                    continue;
                }
                if lower == b'b' && quote_at(i + 1) {
                    i = lex_string(src, i + 1, false).map_err(|e| err(start, e))?;
                    toks.push(Token {
                        kind: Tk::Bytes,
                        start,
                        end: i,
                    });
                    continue;
                }
                if lower == b'b' && matches!(b.get(i + 1), Some(b'r' | b'R')) && quote_at(i + 2) {
                    i = lex_string(src, i + 2, true).map_err(|e| err(start, e))?;
                    toks.push(Token {
                        kind: Tk::Bytes,
                        start,
                        end: i,
                    });
                    continue;
                }
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                toks.push(Token {
                    kind: Tk::Ident,
                    start,
                    end: i,
                });
            }
            _ => {
                let two = src.get(i..i + 2).unwrap_or("");
                let len = if matches!(two, "==" | "!=" | "<=" | ">=" | "&&" | "||") {
                    2
                } else if b"<>!-+*/%?:.,()[]{}".contains(&c) {
                    1
                } else {
                    let w = src[i..].chars().next().map_or(1, char::len_utf8);
                    return Err(err(i, i + w));
                };
                toks.push(Token {
                    kind: Tk::Punct,
                    start: i,
                    end: i + len,
                });
                i += len;
            }
        }
    }
    toks.push(Token {
        kind: Tk::Eof,
        start: src.len(),
        end: src.len(),
    });
    Ok(toks)
}

fn exponent_len(b: &[u8]) -> Option<usize> {
    if !matches!(b.first(), Some(b'e' | b'E')) {
        return None;
    }
    let mut j = 1;
    if matches!(b.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    if !b.get(j).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    while b.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
    }
    Some(j)
}

/// Lexes a quoted string starting at the quote at `i`; returns the end offset, or the offset
/// where lexing failed.
fn lex_string(src: &str, i: usize, raw: bool) -> Result<usize, usize> {
    let b = src.as_bytes();
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    loop {
        let Some(&c) = b.get(j) else {
            return Err(b.len());
        };
        if triple {
            if c == q && b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q) {
                return Ok(j + 3);
            }
        } else {
            if c == q {
                return Ok(j + 1);
            }
            if c == b'\n' || c == b'\r' {
                return Err(j);
            }
        }
        if c == b'\\' && !raw {
            j = escape_end(b, j).ok_or(j + 2)?;
            continue;
        }
        j += 1;
    }
}

/// The end of the escape sequence starting at the backslash at `j`.
fn escape_end(b: &[u8], j: usize) -> Option<usize> {
    let hex = |from: usize, n: usize| {
        (from..from + n).all(|k| b.get(k).is_some_and(u8::is_ascii_hexdigit))
    };
    match b.get(j + 1)? {
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`' => {
            Some(j + 2)
        }
        b'0'..=b'3' => {
            let ok = (j + 2..j + 4).all(|k| matches!(b.get(k), Some(b'0'..=b'7')));
            ok.then_some(j + 4)
        }
        b'x' | b'X' => hex(j + 2, 2).then_some(j + 4),
        b'u' => hex(j + 2, 4).then_some(j + 6),
        b'U' => hex(j + 2, 8).then_some(j + 10),
        _ => None,
    }
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    parsed: Parsed,
}

/// The shape of a parsed expression, as much as the parse-time checks need.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// a plain identifier without a leading dot
    Ident,
    /// `a.b` (a field selection, not a call or index)
    Select,
    Other,
}

type PResult<T> = Result<T, SyntaxError>;

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn text(&self, t: &Token) -> &'a str {
        if t.kind == Tk::Eof {
            "<EOF>"
        } else {
            &self.src[t.start..t.end]
        }
    }

    fn is(&self, p: &str) -> bool {
        let t = self.peek();
        t.kind == Tk::Punct && self.text(t) == p
    }

    fn is_ident(&self, name: &str) -> bool {
        let t = self.peek();
        t.kind == Tk::Ident && self.text(t) == name
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn error_at(&self, t: &Token, msg: String) -> SyntaxError {
        SyntaxError {
            offset: t.start,
            msg,
            recovers: false,
        }
    }

    /// The identifier after a plain `.`. ANTLR chooses between a field selection and a member
    /// call by looking past the `.`, so any other token fails that prediction: `no viable
    /// alternative at input '.in'` (the text from the `.` to the token, whitespace and comments
    /// included, as Go's ANTLR quotes it), at the token. cel-go rewords it for `true`, `false`
    /// and `null` (the `reservedIdentifier` rewrite in its `parser.go`).
    fn selected_ident(&mut self, dot: &Token) -> PResult<Token> {
        let t = self.peek().clone();
        let name = self.text(&t);
        if t.kind == Tk::EscIdent || (t.kind == Tk::Ident && !TOKEN_KEYWORDS.contains(&name)) {
            self.bump();
            return Ok(t);
        }
        let input = &self.src[dot.start..t.end];
        let msg = match input.strip_prefix('.') {
            Some(kw @ ("true" | "false" | "null")) => {
                format!("Syntax error: mismatched input '{kw}' expecting IDENTIFIER")
            }
            _ => format!(
                "Syntax error: no viable alternative at input '{}'",
                go_escape_ws(input)
            ),
        };
        Err(SyntaxError {
            offset: t.start,
            msg,
            recovers: true,
        })
    }

    fn mismatched(&self, expecting: &str) -> SyntaxError {
        let t = self.peek();
        self.error_at(
            t,
            format!(
                "Syntax error: mismatched input '{}' expecting {expecting}",
                self.text(t)
            ),
        )
    }

    fn expect(&mut self, p: &str) -> PResult<()> {
        if self.is(p) {
            self.bump();
            Ok(())
        } else {
            let t = self.peek();
            Err(self.error_at(
                t,
                format!("Syntax error: missing '{p}' at '{}'", self.text(t)),
            ))
        }
    }

    fn start(&mut self) -> PResult<()> {
        self.expr()?;
        if self.peek().kind != Tk::Eof {
            return Err(self.mismatched("<EOF>"));
        }
        Ok(())
    }

    fn expr(&mut self) -> PResult<Shape> {
        self.depth += 1;
        if self.depth > MAX_RECURSION_DEPTH {
            let t = self.peek();
            return Err(self.error_at(
                t,
                format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"),
            ));
        }
        let mut shape = self.binary(0)?;
        if self.is("?") {
            self.bump();
            self.binary(0)?;
            self.expect(":")?;
            self.expr()?;
            shape = Shape::Other;
        }
        self.depth -= 1;
        Ok(shape)
    }

    fn binary_prec(&self) -> Option<usize> {
        let t = self.peek();
        match (t.kind, self.text(t)) {
            (Tk::Punct, "||") => Some(0),
            (Tk::Punct, "&&") => Some(1),
            (Tk::Punct, "==" | "!=" | "<" | "<=" | ">" | ">=") | (Tk::Ident, "in") => Some(2),
            (Tk::Punct, "+" | "-") => Some(3),
            (Tk::Punct, "*" | "/" | "%") => Some(4),
            _ => None,
        }
    }

    /// Binary operators by precedence climbing (left associative; no recursion per operator).
    fn binary(&mut self, min: usize) -> PResult<Shape> {
        let mut shape = self.unary()?;
        while let Some(p) = self.binary_prec() {
            if p < min {
                break;
            }
            self.bump();
            if p >= 4 {
                self.unary()?;
            } else {
                self.binary(p + 1)?;
            }
            shape = Shape::Other;
        }
        Ok(shape)
    }

    fn unary(&mut self) -> PResult<Shape> {
        if self.is("!") || self.is("-") {
            let op = self.text(self.peek());
            let mut count = 0;
            while self.is(op) {
                self.bump();
                count += 1;
            }
            let negated_literal = op == "-" && count == 1 && self.peek().kind == Tk::Int;
            if negated_literal {
                let t = self.bump();
                self.int_literal(&t, true)?;
                self.member_suffixes(Shape::Other, false, false)?;
            } else {
                self.member()?;
            }
            return Ok(Shape::Other);
        }
        self.member()
    }

    fn member(&mut self) -> PResult<Shape> {
        let first_is_cel = self.is_ident("cel");
        let (shape, qualified) = self.primary()?;
        self.member_suffixes(shape, qualified, first_is_cel)
    }

    fn ident_after_dot(&mut self) -> PResult<Token> {
        let t = self.peek().clone();
        let keyword = t.kind == Tk::Ident && TOKEN_KEYWORDS.contains(&self.text(&t));
        if (t.kind == Tk::Ident && !keyword) || t.kind == Tk::EscIdent {
            self.bump();
            Ok(t)
        } else {
            Err(SyntaxError {
                recovers: keyword,
                ..self.mismatched("{IDENTIFIER, ESC_IDENTIFIER}")
            })
        }
    }

    fn member_suffixes(
        &mut self,
        mut shape: Shape,
        mut qualified: bool,
        first_is_cel: bool,
    ) -> PResult<Shape> {
        let mut receiver_is_cel = first_is_cel && shape == Shape::Ident;
        loop {
            if self.is(".") {
                let dot = self.bump();
                let optional = self.is("?");
                let id = if optional {
                    // `.?` can only be a selection: the identifier rule itself refuses the rest.
                    self.bump();
                    self.ident_after_dot()?
                } else {
                    self.selected_ident(&dot)?
                };
                let name = self.text(&id);
                if self.is("(") && !optional && id.kind == Tk::Ident {
                    self.bump();
                    let args = self.args(")")?;
                    self.check_receiver_macro(name, &args, receiver_is_cel)?;
                    shape = Shape::Other;
                    qualified = false;
                } else {
                    shape = Shape::Select;
                    qualified = qualified && !optional && id.kind == Tk::Ident;
                }
                receiver_is_cel = false;
            } else if self.is("[") {
                self.bump();
                if self.is("?") {
                    self.bump();
                }
                self.expr()?;
                self.expect("]")?;
                shape = Shape::Other;
                qualified = false;
                receiver_is_cel = false;
            } else if self.is("{") && qualified {
                // a message construction `a.b.Type{field: value}`
                self.bump();
                self.field_inits()?;
                shape = Shape::Other;
                qualified = false;
            } else {
                return Ok(shape);
            }
        }
    }

    /// Comma separated expressions up to `close` (no trailing comma); returns their shapes and
    /// starting tokens.
    fn args(&mut self, close: &str) -> PResult<Vec<(Shape, Token)>> {
        let mut out = Vec::new();
        if self.is(close) {
            self.bump();
            return Ok(out);
        }
        loop {
            let t = self.peek().clone();
            let shape = self.expr()?;
            out.push((shape, t));
            if self.is(",") {
                self.bump();
                continue;
            }
            self.expect(close)?;
            return Ok(out);
        }
    }

    fn check_receiver_macro(
        &self,
        name: &str,
        args: &[(Shape, Token)],
        receiver_is_cel: bool,
    ) -> PResult<()> {
        let comprehension = match name {
            "all" | "exists" | "exists_one" | "existsOne" | "filter" => {
                args.len() == 2 || args.len() == 3
            }
            "map" => (2..=3).contains(&args.len()),
            "transformList" | "transformMap" | "transformMapEntry" => (3..=4).contains(&args.len()),
            "bind" if receiver_is_cel => {
                if args.len() == 3 && args[0].0 != Shape::Ident {
                    return Err(self.error_at(
                        &args[0].1,
                        "cel.bind() variable names must be simple identifiers".into(),
                    ));
                }
                false
            }
            _ => false,
        };
        if comprehension && args[0].0 != Shape::Ident {
            return Err(self.error_at(&args[0].1, "argument must be a simple name".into()));
        }
        Ok(())
    }

    fn int_literal(&self, t: &Token, negated: bool) -> PResult<()> {
        let text = self.text(t);
        let ok = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            u64::from_str_radix(hex, 16).is_ok_and(|v| v <= i64::MAX as u64 + u64::from(negated))
        } else {
            text.parse::<u64>()
                .is_ok_and(|v| v <= i64::MAX as u64 + u64::from(negated))
        };
        if ok {
            Ok(())
        } else {
            Err(self.error_at(t, "invalid int literal".into()))
        }
    }

    /// Returns the shape and whether it is a (possibly dotted) plain name, which a `{` may follow.
    fn primary(&mut self) -> PResult<(Shape, bool)> {
        let t = self.peek().clone();
        match t.kind {
            Tk::Int => {
                self.bump();
                self.int_literal(&t, false)?;
                Ok((Shape::Other, false))
            }
            Tk::Uint => {
                self.bump();
                let text = self.text(&t);
                let digits = &text[..text.len() - 1];
                let ok = match digits
                    .strip_prefix("0x")
                    .or_else(|| digits.strip_prefix("0X"))
                {
                    Some(hex) => u64::from_str_radix(hex, 16).is_ok(),
                    None => digits.parse::<u64>().is_ok(),
                };
                if !ok {
                    return Err(self.error_at(&t, "invalid uint literal".into()));
                }
                Ok((Shape::Other, false))
            }
            Tk::Float | Tk::Str | Tk::Bytes => {
                self.bump();
                Ok((Shape::Other, false))
            }
            Tk::Ident => {
                let name = self.text(&t);
                if matches!(name, "true" | "false" | "null") {
                    self.bump();
                    return Ok((Shape::Other, false));
                }
                if name == "in" {
                    return Err(self.mismatched(OPERAND_SET));
                }
                self.bump();
                self.named(&t, name, false)
            }
            Tk::Punct => match self.text(&t) {
                "." => {
                    self.bump();
                    let id = self.peek().clone();
                    if id.kind != Tk::Ident {
                        return Err(self.mismatched("IDENTIFIER"));
                    }
                    self.bump();
                    let name = self.text(&id);
                    self.named(&id, name, true)
                }
                "(" => {
                    self.bump();
                    self.expr()?;
                    self.expect(")")?;
                    Ok((Shape::Other, false))
                }
                "[" => {
                    self.bump();
                    self.list_inits()?;
                    Ok((Shape::Other, false))
                }
                "{" => {
                    self.bump();
                    self.map_inits()?;
                    Ok((Shape::Other, false))
                }
                _ => Err(self.mismatched(OPERAND_SET)),
            },
            Tk::EscIdent | Tk::Eof => Err(self.mismatched(OPERAND_SET)),
        }
    }

    /// An identifier in operand position: a variable, a global call (macros checked), or the
    /// start of a qualified message name.
    fn named(&mut self, t: &Token, name: &'a str, leading_dot: bool) -> PResult<(Shape, bool)> {
        if RESERVED.contains(&name) {
            return Err(self.error_at(t, format!("reserved identifier: {name}")));
        }
        if self.is("(") {
            self.bump();
            let args = self.args(")")?;
            if name == "has" && !leading_dot && args.len() == 1 && args[0].0 != Shape::Select {
                return Err(self.error_at(&args[0].1, "invalid argument to has() macro".into()));
            }
            return Ok((Shape::Other, false));
        }
        if name == "oldSelf" && !leading_dot {
            self.parsed.uses_old_self = true;
        }
        let shape = if leading_dot {
            Shape::Other
        } else {
            Shape::Ident
        };
        Ok((shape, true))
    }

    fn opt_marker(&mut self) {
        if self.is("?") {
            self.bump();
        }
    }

    fn list_inits(&mut self) -> PResult<()> {
        loop {
            if self.is("]") {
                self.bump();
                return Ok(());
            }
            self.opt_marker();
            self.expr()?;
            if self.is(",") {
                self.bump();
                continue;
            }
            self.expect("]")?;
            return Ok(());
        }
    }

    fn map_inits(&mut self) -> PResult<()> {
        loop {
            if self.is("}") {
                self.bump();
                return Ok(());
            }
            self.opt_marker();
            self.expr()?;
            self.expect(":")?;
            self.expr()?;
            if self.is(",") {
                self.bump();
                continue;
            }
            self.expect("}")?;
            return Ok(());
        }
    }

    fn field_inits(&mut self) -> PResult<()> {
        loop {
            if self.is("}") {
                self.bump();
                return Ok(());
            }
            self.opt_marker();
            self.ident_after_dot()?;
            self.expect(":")?;
            self.expr()?;
            if self.is(",") {
                self.bump();
                continue;
            }
            self.expect("}")?;
            return Ok(());
        }
    }
}

/// cel-go's rendering of an error at byte `offset` of `src`.
pub(crate) fn render_at(src: &str, offset: usize, msg: &str) -> String {
    render(
        src,
        &SyntaxError {
            offset,
            msg: msg.to_string(),
            recovers: false,
        },
    )
}

/// Go ANTLR's `escapeWSAndQuote` without the quotes: the input a `no viable alternative`
/// message quotes shows line breaks and tabs escaped.
fn go_escape_ws(s: &str) -> String {
    s.replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}

/// A message of the interpreter's ANTLR parser as cel-go words it: the quoted input of `no
/// viable alternative` escaped as Go's ANTLR does, and cel-go's rewording of a selected
/// `true`, `false` or `null`.
fn cel_go_message(msg: &str) -> String {
    const NO_VIABLE: &str = "no viable alternative at input '";
    let Some(at) = msg.find(NO_VIABLE) else {
        return msg.to_string();
    };
    let quoted_from = at + NO_VIABLE.len();
    let Some(len) = msg[quoted_from..].rfind('\'') else {
        return msg.to_string();
    };
    let input = go_escape_ws(&msg[quoted_from..quoted_from + len]);
    let rest = &msg[quoted_from + len + 1..];
    // cel-go's pattern is `'.(true|false|null)'`: any one character (the `.`), then the word.
    let mut chars = input.chars();
    if let (Some(_), kw @ ("true" | "false" | "null")) = (chars.next(), chars.as_str()) {
        return format!(
            "{}mismatched input '{kw}' expecting IDENTIFIER{rest}",
            &msg[..at]
        );
    }
    format!("{}{NO_VIABLE}{input}'{rest}", &msg[..at])
}

/// The byte offset of 1-based `line` and `column` (in characters) of `src`.
fn offset_of(src: &str, line: isize, column: isize) -> usize {
    let Ok(line) = usize::try_from(line) else {
        return 0;
    };
    let line_start = if line <= 1 {
        0
    } else {
        src.match_indices('\n')
            .nth(line - 2)
            .map_or(src.len(), |(i, _)| i + 1)
    };
    let column = usize::try_from(column.max(1) - 1).unwrap_or(0);
    src[line_start..]
        .char_indices()
        .nth(column)
        .map_or(src.len(), |(i, _)| line_start + i)
}

/// Every error cel-go reports for `src`, from the interpreter's parser: it is ANTLR on cel-go's
/// grammar, so it recovers from an error as cel-go's does and meets the same errors after it
/// (the macro check on what recovery left included), sorted by position as cel-go sorts them.
/// `None` when it accepts `src` or `src` is too long to hand it (see `MAX_TOKENS`).
fn recovered_errors(src: &str, tokens: usize) -> Option<String> {
    if tokens > crate::object::cel::MAX_TOKENS {
        return None;
    }
    let errors = crate::object::cel::on_a_deep_stack(|| {
        kube_cel::cel::parser::Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_RECURSION_DEPTH as u16)
            .parse(src)
    })
    .err()?;
    let rendered: Vec<String> = errors
        .errors
        .iter()
        .map(|e| {
            render_at(
                src,
                offset_of(src, e.pos.0, e.pos.1),
                &cel_go_message(&e.msg),
            )
        })
        .collect();
    (!rendered.is_empty()).then(|| rendered.join("\n"))
}

/// cel-go's rendering of an error: location, message, the source line and a caret.
fn render(src: &str, e: &SyntaxError) -> String {
    let offset = e.offset.min(src.len());
    let before = &src[..offset];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let col = src[line_start..offset].chars().count();
    let line_end = src[line_start..]
        .find('\n')
        .map_or(src.len(), |p| line_start + p);
    let snippet = src[line_start..line_end].replace('\t', " ");
    let dots = ".".repeat(col);
    format!(
        "ERROR: <input>:{line_no}:{}: {}\n | {snippet}\n | {dots}^",
        col + 1,
        e.msg
    )
}

/// Parses `src` as a CEL expression; the error is cel-go-shaped (`ERROR: <input>:L:C: ...`).
pub(crate) fn parse(src: &str) -> Result<Parsed, String> {
    let toks = lex(src).map_err(|e| render(src, &e))?;
    let tokens = toks.len();
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        parsed: Parsed::default(),
    };
    match p.start() {
        Ok(()) => Ok(Parsed { tokens, ..p.parsed }),
        // This checker stops at the first error. Where ANTLR recovers from it and goes on, the
        // rest of cel-go's list (`self.in`: the `in` operator then missing its operand, a
        // `has()` left without a selection) comes from an ANTLR parser.
        Err(e) if e.recovers => {
            Err(recovered_errors(src, tokens).unwrap_or_else(|| render(src, &e)))
        }
        Err(e) => Err(render(src, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn accepts_cel() {
        for src in [
            "self.x > 0",
            "self.all(x, x > 0)",
            "has(self.a) && self.a.b == 'x'",
            "b'abc' + r'x\\y' + \"\"\"multi\nline\"\"\" + '\\u00e9\\x41\\101'",
            "self.__namespace__ == 1",
            "[1, 2, {'a': 1},][0]",
            "a ? b : c ? d : e",
            "self.x.?y.orValue(1) == 1 && [?self.z] == []",
            "-9223372036854775808 < 0u && 1.5e3 > .5 && 0x1F == 31",
            "self.map(k, self[k].size()).exists_one(v, v == 2)",
            "cel.bind(xs, self.items, xs.size() > 0)",
            "google.protobuf.Timestamp{seconds: 1} != null",
            "!self.a || !!self.b",
            "oldSelf == self // keep",
            "self.list.all(i, i in ['a', 'b'])",
            "type(self) == string && duration('1s') < duration('2s')",
            "self.`dashed-name` == 1",
        ] {
            assert!(parse(src).is_ok(), "{src}: {:?}", parse(src).err());
        }
        assert!(parse("oldSelf.x == self.x").unwrap().uses_old_self);
        assert!(!parse("self.oldSelf == 1").unwrap().uses_old_self);
    }

    #[test]
    fn rejects_bad_cel() {
        let e = parse("self.x >").unwrap_err();
        assert!(
            e.starts_with("ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {"),
            "{e}"
        );
        assert!(e.ends_with("\n | self.x >\n | ........^"), "{e}");
        for (src, needle) in [
            ("(", "mismatched input '<EOF>'"),
            ("(a", "missing ')' at '<EOF>'"),
            ("a b", "mismatched input 'b' expecting <EOF>"),
            ("a # b", "token recognition error at: '#'"),
            ("'abc", "token recognition error"),
            ("namespace == 1", "reserved identifier: namespace"),
            ("has(self)", "invalid argument to has() macro"),
            ("self.all(x.y, true)", "argument must be a simple name"),
            ("99999999999999999999", "invalid int literal"),
            ("f(a,)", "mismatched input ')'"),
            ("'\\q'", "token recognition error"),
        ] {
            let e = parse(src).unwrap_err();
            assert!(e.contains(needle), "{src}: {e}");
        }
    }

    /// cel-go's lexer makes tokens of `in`, `true`, `false` and `null` only: the other reserved
    /// words select fields, and those four after a `.` fail ANTLR's prediction, with every
    /// error cel-go reports after recovering (checked against the same grammar on ANTLR).
    #[test]
    fn keywords_after_a_dot() {
        for kw in super::RESERVED {
            let src = format!("self.{kw} == self.__{kw}__ && has(self.{kw}) && self.x.{kw}.y");
            assert_eq!(
                parse(&src).is_ok(),
                !super::TOKEN_KEYWORDS.contains(kw),
                "{src}: {:?}",
                parse(&src).err()
            );
        }
        let operand = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";
        assert_eq!(
            parse("!has(self.in) || self.in").unwrap_err(),
            [
                "ERROR: <input>:1:6: invalid argument to has() macro\n | !has(self.in) || self.in\n | .....^".to_string(),
                "ERROR: <input>:1:11: Syntax error: no viable alternative at input '.in'\n | !has(self.in) || self.in\n | ..........^".into(),
                format!("ERROR: <input>:1:13: Syntax error: mismatched input ')' expecting {operand}\n | !has(self.in) || self.in\n | ............^"),
                "ERROR: <input>:1:23: Syntax error: no viable alternative at input '.in'\n | !has(self.in) || self.in\n | ......................^".into(),
                format!("ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>' expecting {operand}\n | !has(self.in) || self.in\n | ........................^"),
            ]
            .join("\n")
        );
        // cel-go rewords `no viable alternative at input '.true'` (its `reservedIdentifier`).
        assert_eq!(
            parse("!has(self.true) || self.true").unwrap_err(),
            [
                "ERROR: <input>:1:6: invalid argument to has() macro\n | !has(self.true) || self.true\n | .....^",
                "ERROR: <input>:1:11: Syntax error: mismatched input 'true' expecting IDENTIFIER\n | !has(self.true) || self.true\n | ..........^",
                "ERROR: <input>:1:25: Syntax error: mismatched input 'true' expecting IDENTIFIER\n | !has(self.true) || self.true\n | ........................^",
            ]
            .join("\n")
        );
        for (src, first) in [
            (
                "self.null == 1",
                "1:6: Syntax error: mismatched input 'null' expecting IDENTIFIER",
            ),
            // Only `.` directly before the word is reworded; Go's ANTLR escapes line breaks.
            (
                "self. false",
                "1:7: Syntax error: no viable alternative at input '. false'",
            ),
            (
                "self.\n false",
                "2:2: Syntax error: no viable alternative at input '.\\n false'",
            ),
            (
                "self.)",
                "1:6: Syntax error: no viable alternative at input '.)'",
            ),
            (
                "self.",
                "1:6: Syntax error: no viable alternative at input '.'",
            ),
            // `.?` is a selection for certain: the identifier rule refuses the word.
            (
                "self.?in",
                "1:7: Syntax error: mismatched input 'in' expecting {IDENTIFIER, ESC_IDENTIFIER}",
            ),
        ] {
            let e = parse(src).unwrap_err();
            assert!(
                e.starts_with(&format!("ERROR: <input>:{first}\n")),
                "{src}: {e}"
            );
        }
    }

    #[test]
    fn bounded_nesting() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        let e = parse(&deep).unwrap_err();
        assert!(e.contains("expression recursion limit exceeded"), "{e}");
        let chain = format!("a{}", ".b".repeat(100_000));
        assert!(parse(&chain).is_ok());
        let sum = format!("a{}", " + b".repeat(100_000));
        assert!(parse(&sum).is_ok());
        let nots = format!("{}a", "!".repeat(100_000));
        assert!(parse(&nots).is_ok());
        let ok = format!("{}a{}", "(".repeat(200), ")".repeat(200));
        assert!(parse(&ok).is_ok());
    }
}

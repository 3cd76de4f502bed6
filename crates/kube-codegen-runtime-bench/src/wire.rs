//! W3's json variant: objects as JSON bytes, as they arrive from the wire.
//!
//! Holding 1,000,000 watch-event lines would take 1.7 GB, so each of the 100,000 objects is
//! serialised once with a placeholder resourceVersion and split around it; an event line is
//! then the watch-event envelope around prefix + rv + suffix.

use std::io::Write as _;

use kube::api::WatchEvent;

use crate::bench::v1::Widget;
use crate::objects;

/// The envelope kube-apiserver puts around an object in a watch response line.
const EVENT_HEAD: &[u8] = br#"{"type":"MODIFIED","object":"#;
const EVENT_TAIL: &[u8] = b"}\n";
/// The placeholder resourceVersion value the objects are serialised with.
const RV_FIELD: &[u8] = br#""resourceVersion":"0""#;

/// One object's JSON, split where its resourceVersion value goes.
struct Template {
    bytes: Box<[u8]>,
    /// Offset of the value's first byte (just after the opening quote).
    at: usize,
}

/// The JSON of W3's objects 0..n, ready to be stamped with any resourceVersion.
pub struct Templates(Vec<Template>);

impl Templates {
    /// Serialises BENCHMARKS.md's objects 0..n (full Widgets).
    pub fn new(n: usize) -> Self {
        Templates((0..n).map(|i| template(&objects::widget(i, 0))).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Heap bytes held by the templates (so memory figures can say what they include).
    pub fn heap_bytes(&self) -> usize {
        self.0.iter().map(|t| t.bytes.len()).sum::<usize>()
            + self.0.capacity() * std::mem::size_of::<Template>()
    }

    /// Appends object `i`'s JSON at resourceVersion `rv` to `out`.
    pub fn write_object(&self, i: usize, rv: u64, out: &mut Vec<u8>) {
        let t = &self.0[i];
        out.extend_from_slice(&t.bytes[..t.at]);
        write!(out, "{rv}").expect("writing to a Vec cannot fail");
        out.extend_from_slice(&t.bytes[t.at..]);
    }

    /// Appends a MODIFIED watch-event line for object `i` at `rv` to `out`.
    pub fn write_event(&self, i: usize, rv: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(EVENT_HEAD);
        self.write_object(i, rv, out);
        out.extend_from_slice(EVENT_TAIL);
    }

    /// A fresh MODIFIED watch-event line for object `i` at `rv` (what the feeder sends).
    pub fn event(&self, i: usize, rv: u64) -> Vec<u8> {
        let t = &self.0[i];
        let mut out = Vec::with_capacity(EVENT_HEAD.len() + t.bytes.len() + 20 + EVENT_TAIL.len());
        self.write_event(i, rv, &mut out);
        out
    }

    /// Object `i` at `rv`, decoded from its JSON (a list item read from the wire).
    pub fn decode_object(&self, i: usize, rv: u64) -> Result<Widget, serde_json::Error> {
        let mut buf = Vec::with_capacity(self.0[i].bytes.len() + 20);
        self.write_object(i, rv, &mut buf);
        serde_json::from_slice(&buf)
    }
}

/// Decodes one watch-event line, as kube's watch stream does.
pub fn decode_event(line: &[u8]) -> Result<WatchEvent<Widget>, serde_json::Error> {
    serde_json::from_slice(line)
}

fn template(w: &Widget) -> Template {
    let mut bytes = serde_json::to_vec(w).expect("a Widget serialises");
    let field = bytes
        .windows(RV_FIELD.len())
        .position(|win| win == RV_FIELD)
        .expect("the object carries the placeholder resourceVersion");
    let at = field + RV_FIELD.len() - 2;
    bytes.remove(at); // the placeholder "0"
    Template {
        bytes: bytes.into_boxed_slice(),
        at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_line_decodes_to_the_object_it_was_made_from() {
        let t = Templates::new(3);
        let line = t.event(2, 100_003);
        match decode_event(&line).expect("decodes") {
            WatchEvent::Modified(w) => {
                let want = objects::widget(2, 100_003);
                assert_eq!(
                    serde_json::to_value(&w).unwrap(),
                    serde_json::to_value(&want).unwrap()
                );
            }
            other => panic!("expected MODIFIED, got {other:?}"),
        }
        let obj = t.decode_object(1, 2).expect("decodes");
        assert_eq!(obj.metadata.resource_version.as_deref(), Some("2"));
    }
}

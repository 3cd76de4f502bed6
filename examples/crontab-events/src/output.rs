//! The program's stdout: `SYNCED <n>`, one JSON line per handler call, then `FINAL` and the
//! cache's `key resourceVersion` lines.
//!
//! Every line is written whole and flushed under one lock, because the event handler (on the
//! informer's handler task) and the main task both write, and a reader follows the output live.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::Resource;
use kube_codegen_runtime::cache::{Deleted, EventHandlerFns, key_of};
use serde::Serialize;
use tokio::sync::Notify;

use crate::stable::v1::CronTab;

/// What a handler call was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Add,
    Update,
    Delete,
}

/// One event line: `{"event":"add","key":"ns/name","resourceVersion":"42"}`.
#[derive(Debug, Serialize)]
pub struct EventLine<'a> {
    pub event: EventKind,
    pub key: &'a str,
    #[serde(rename = "resourceVersion")]
    pub resource_version: &'a str,
}

impl EventLine<'_> {
    /// The line as JSON (without the newline).
    pub fn to_json(&self) -> String {
        // Only strings and a unit enum: serialising cannot fail, but stay panic-free anyway.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// Shared, line-at-a-time stdout (or any writer, for tests).
pub struct Output {
    sink: Mutex<Sink>,
    failed: Notify,
}

struct Sink {
    writer: Box<dyn Write + Send>,
    /// After `FINAL` (or a failed write) nothing more is written, so a handler call that races
    /// with shutdown cannot add a line after the final listing.
    closed: bool,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("closed", &self.lock().closed)
            .finish_non_exhaustive()
    }
}

impl Output {
    /// Output to the process's stdout.
    pub fn stdout() -> Self {
        Self::new(io::stdout())
    }

    /// Output to `writer`.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Output {
            sink: Mutex::new(Sink {
                writer: Box::new(writer),
                closed: false,
            }),
            failed: Notify::new(),
        }
    }

    /// A poisoned lock only means a writer panicked mid-line; the sink itself is still usable.
    fn lock(&self) -> MutexGuard<'_, Sink> {
        self.sink.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes and flushes one line; does nothing once closed. A failed write closes the output
    /// and wakes [`failed`](Self::failed).
    pub fn line(&self, line: &str) -> io::Result<()> {
        let mut sink = self.lock();
        if sink.closed {
            return Ok(());
        }
        self.write_locked(&mut sink, line)
    }

    /// Writes `lines` and closes the output: nothing is written after them.
    pub fn finish(&self, lines: impl IntoIterator<Item = String>) -> io::Result<()> {
        let mut sink = self.lock();
        if sink.closed {
            return Err(io::Error::other(
                "output already closed after a failed write",
            ));
        }
        for line in lines {
            self.write_locked(&mut sink, &line)?;
        }
        sink.closed = true;
        Ok(())
    }

    fn write_locked(&self, sink: &mut Sink, line: &str) -> io::Result<()> {
        let result = writeln!(sink.writer, "{line}").and_then(|()| sink.writer.flush());
        if result.is_err() {
            sink.closed = true;
            // notify_one keeps a permit, so a waiter that arrives later still wakes.
            self.failed.notify_one();
        }
        result
    }

    /// Resolves once a write has failed (e.g. the reader closed the pipe).
    pub async fn failed(&self) {
        self.failed.notified().await;
    }

    /// Prints the event line of `kind` for `object`.
    fn object_event(&self, kind: EventKind, object: &CronTab) {
        match key_of(object) {
            Ok(key) => self.event(kind, &key, object),
            // The informer caches only objects it could key, so this is not expected.
            Err(e) => eprintln!("crontab-events: {kind:?} event not printed: {e}"),
        }
    }

    fn event(&self, kind: EventKind, key: &str, object: &CronTab) {
        let line = EventLine {
            event: kind,
            key,
            resource_version: object.meta().resource_version.as_deref().unwrap_or(""),
        };
        if let Err(e) = self.line(&line.to_json()) {
            eprintln!("crontab-events: writing to stdout: {e}");
        }
    }
}

/// The event handler: one line per call. Initial-list adds are printed too (they are handler
/// calls), so they come before `SYNCED`. A tombstone ([`Deleted::FinalStateUnknown`]: the
/// delete happened while the informer was not watching) prints its key and the resourceVersion
/// the cache last held, since the server's final version was never seen.
pub fn event_handler(out: Arc<Output>) -> EventHandlerFns<CronTab> {
    let (on_add, on_update, on_delete) = (out.clone(), out.clone(), out);
    EventHandlerFns::new()
        .on_add(move |object, _in_initial_list| on_add.object_event(EventKind::Add, object))
        .on_update(move |_old, new| on_update.object_event(EventKind::Update, new))
        .on_delete(move |deleted| match deleted {
            Deleted::Object(object) => on_delete.object_event(EventKind::Delete, object),
            Deleted::FinalStateUnknown { key, object } => {
                on_delete.event(EventKind::Delete, key, object)
            }
        })
}

/// The `FINAL` block: `FINAL`, then `key resourceVersion` for each object, sorted by key.
pub fn final_lines(objects: &[Arc<CronTab>]) -> Vec<String> {
    let mut rows: Vec<(String, &str)> = objects
        .iter()
        .filter_map(|o| {
            let rv = o.meta().resource_version.as_deref().unwrap_or("");
            match key_of(&**o) {
                Ok(key) => Some((key, rv)),
                Err(e) => {
                    eprintln!("crontab-events: cached object not listed: {e}");
                    None
                }
            }
        })
        .collect();
    rows.sort();
    std::iter::once("FINAL".to_owned())
        .chain(rows.into_iter().map(|(key, rv)| format!("{key} {rv}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_codegen_runtime::cache::EventHandler;

    /// A writer whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// A writer that always fails, like stdout after the reader went away.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn crontab(ns: &str, name: &str, rv: &str) -> Arc<CronTab> {
        let mut c = CronTab::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.metadata.resource_version = Some(rv.into());
        Arc::new(c)
    }

    #[test]
    fn every_handler_call_prints_one_json_line() {
        let captured = Captured::default();
        let handler = event_handler(Arc::new(Output::new(captured.clone())));
        EventHandler::on_add(&handler, &crontab("a", "x", "1"), true);
        EventHandler::on_update(&handler, &crontab("a", "x", "1"), &crontab("a", "x", "2"));
        EventHandler::on_delete(&handler, &Deleted::Object(crontab("a", "x", "3")));
        // The tombstone's key is used as given, with the cached object's resourceVersion.
        EventHandler::on_delete(
            &handler,
            &Deleted::FinalStateUnknown {
                key: "b/y".into(),
                object: crontab("b", "y", "7"),
            },
        );
        assert_eq!(
            captured.text(),
            concat!(
                r#"{"event":"add","key":"a/x","resourceVersion":"1"}"#,
                "\n",
                r#"{"event":"update","key":"a/x","resourceVersion":"2"}"#,
                "\n",
                r#"{"event":"delete","key":"a/x","resourceVersion":"3"}"#,
                "\n",
                r#"{"event":"delete","key":"b/y","resourceVersion":"7"}"#,
                "\n",
            )
        );
    }

    #[test]
    fn an_unkeyable_object_prints_nothing() {
        let captured = Captured::default();
        let handler = event_handler(Arc::new(Output::new(captured.clone())));
        EventHandler::on_add(&handler, &Arc::new(CronTab::default()), false);
        assert_eq!(captured.text(), "");
    }

    #[test]
    fn final_is_sorted_by_key_and_closes_the_output() {
        let captured = Captured::default();
        let out = Output::new(captured.clone());
        out.line("SYNCED 3").unwrap();
        let objects = [
            crontab("b", "a", "5"),
            crontab("a", "z", "9"),
            crontab("a", "b", "12"),
        ];
        out.finish(final_lines(&objects)).unwrap();
        // A handler call racing with shutdown writes nothing after FINAL.
        out.line("late").unwrap();
        assert_eq!(captured.text(), "SYNCED 3\nFINAL\na/b 12\na/z 9\nb/a 5\n");
    }

    #[tokio::test]
    async fn a_failed_write_closes_the_output_and_wakes_the_waiter() {
        let out = Output::new(Broken);
        let err = out.line("SYNCED 0").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        // Returns at once: the failure left a permit behind.
        tokio::time::timeout(std::time::Duration::from_secs(5), out.failed())
            .await
            .expect("failed() resolves after a failed write");
        assert!(
            out.finish(Vec::new()).is_err(),
            "no FINAL after a failed write"
        );
    }
}

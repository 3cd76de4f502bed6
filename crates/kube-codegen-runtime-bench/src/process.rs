//! The processes R1 and S1 drive: this same binary started again with other arguments (the
//! in-memory server, a controller variant or replica), spoken to one line at a time over its
//! stdin and stdout, and the small Tokio runtime each of them runs on.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A child process speaking lines. Its stderr is ours, so its progress shows as it runs.
pub struct Proc {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    what: String,
}

impl Proc {
    /// Starts this binary with `args`; `what` names it in errors.
    pub fn spawn(args: &[String], what: String) -> Result<Proc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding this binary: {e}"))?;
        // `BENCH_CHILD_WRAPPER="perf record -g -o /tmp/{name}.data --"` runs every variant (not
        // the server) under a profiler; `{name}` is the variant's name.
        let wrapper = std::env::var("BENCH_CHILD_WRAPPER")
            .ok()
            .filter(|_| !args.iter().any(|a| a == "--server"));
        let mut command = match &wrapper {
            Some(w) => {
                let mut words = w.split_whitespace().map(|p| p.replace("{name}", &what));
                let mut c = Command::new(words.next().ok_or("BENCH_CHILD_WRAPPER is empty")?);
                c.args(words).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {what}: {e}"))?;
        let input = child.stdin.take();
        let output = child.stdout.take().map(BufReader::new);
        let output = output.ok_or_else(|| format!("{what}: no stdout"))?;
        Ok(Proc {
            child,
            input,
            output,
            what,
        })
    }

    /// Starts the server process (this binary with `args`, `--server` among them) and reads up
    /// to its `url ADDR` line, echoing its `#` comments: seeding happens before it, so this
    /// returns once the server is ready.
    pub fn spawn_server(args: &[String]) -> Result<(Proc, String), String> {
        let mut server = Proc::spawn(args, "the server".into())?;
        loop {
            match server.line()? {
                Some(l) if l.starts_with('#') => eprintln!("{l}"),
                Some(l) => match l.strip_prefix("url ") {
                    Some(u) => {
                        let url = u.to_owned();
                        return Ok((server, url));
                    }
                    None => return Err(format!("the server printed {l:?} before its url")),
                },
                None => return Err("the server ended before printing its url".into()),
            }
        }
    }

    /// The next line, or `None` at the end of its output.
    pub fn line(&mut self) -> Result<Option<String>, String> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line.trim_end().to_owned())),
            Err(e) => Err(format!("reading {}: {e}", self.what)),
        }
    }

    /// The next line; the end of its output is an error.
    pub fn next_line(&mut self) -> Result<String, String> {
        self.line()?
            .ok_or_else(|| format!("{} ended early", self.what))
    }

    /// Lines until `marker`, its figures (`name value unit`) collected; `#` comments echoed.
    pub fn until(&mut self, marker: &str) -> Result<Vec<(String, f64)>, String> {
        let mut figures = Vec::new();
        loop {
            let l = self.next_line()?;
            if l == marker {
                return Ok(figures);
            }
            if l.starts_with('#') {
                eprintln!("{l}");
                continue;
            }
            let mut parts = l.split_whitespace();
            let (Some(name), Some(v)) = (parts.next(), parts.next()) else {
                return Err(format!("{} printed {l:?}", self.what));
            };
            let v: f64 = v
                .parse()
                .map_err(|_| format!("{} printed {l:?}", self.what))?;
            figures.push((name.to_owned(), v));
        }
    }

    /// Writes `command` and a newline to its stdin.
    pub fn send(&mut self, command: &str) -> Result<(), String> {
        let input = self.input.as_mut().ok_or("stdin closed")?;
        writeln!(input, "{command}")
            .and_then(|()| input.flush())
            .map_err(|e| format!("writing to {}: {e}", self.what))
    }

    /// Closes its input (the server exits on it) and waits for it.
    pub fn finish(mut self) -> Result<(), String> {
        drop(self.input.take());
        let status = self
            .child
            .wait()
            .map_err(|e| format!("waiting for {}: {e}", self.what))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{} failed ({status})", self.what))
        }
    }
}

/// The runtime every server, variant and replica process runs on (the 2-thread Tokio runtime
/// the benches' headers name; `BENCH_THREADS=N` gives every process of the run N threads).
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.unwrap_or(2))
        .enable_all()
        .build()
        .map_err(|e| format!("building the Tokio runtime: {e}"))
}

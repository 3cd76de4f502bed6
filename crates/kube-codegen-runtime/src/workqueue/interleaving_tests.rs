//! Exhaustive interleaving test of the core state machine.
//!
//! Small scenarios of producers, workers (looping `get` -> `done` until `None`), `shutdown` and
//! `shutdown_with_drain` callers are run under every possible ordering of their atomic steps
//! (each step is one critical section of the real queue). Wakers are thread ids; a blocked
//! thread only runs again once woken, so a lost wake-up shows up as a thread left blocked.
//! Besides normal steps, a blocked getter may also be polled spuriously (once) or, if marked
//! cancellable, drop its `get` future and exit, as async code may.
//!
//! Checked in every execution: the core invariants after every step; no item held by two
//! workers at once; no stall (items queued while every getter sleeps unnotified); at the end every thread finished (no lost wake-up, no hung drain), nothing
//! is left queued, and every item whose last add was accepted was handed out after that add;
//! a completed, unaborted drain saw no queued or in-flight item.

use super::core::{Core, GetPoll};

type Item = u8;
type Tid = usize;

#[derive(Clone, Copy, Debug)]
enum Op {
    Add(Item),
    /// An add with a priority above the default: raises a queued item, or sets the priority a
    /// processing one is queued again with.
    AddHigh(Item),
    Shutdown,
    /// `shutdown_with_drain` and wait for it.
    Drain,
    /// Loop `get` -> `done` until `get` returns `None`. If `cancellable`, the thread may drop a
    /// pending `get` and exit instead.
    Worker {
        cancellable: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Getting { key: Option<usize>, blocked: bool },
    Holding(Item),
    Draining { started: bool, blocked: bool },
    Finished,
}

#[derive(Clone, Debug)]
struct Thread {
    ops: &'static [Op],
    pc: usize,
    phase: Phase,
    woken: bool,
    spurious_left: u8,
}

#[derive(Clone, Copy, Debug)]
enum Move {
    Step,
    Spurious,
    Cancel,
}

#[derive(Clone)]
struct World {
    core: Core<Item, Tid>,
    threads: Vec<Thread>,
    held: [Option<Tid>; 4],
    pending: [bool; 4],
    aborted_drain: bool,
}

impl World {
    fn new(scripts: &[&'static [Op]]) -> Self {
        World {
            core: Core::new(Default::default(), None),
            threads: scripts
                .iter()
                .map(|ops| Thread {
                    ops,
                    pc: 0,
                    phase: if ops.is_empty() {
                        Phase::Finished
                    } else {
                        Phase::Start
                    },
                    woken: false,
                    spurious_left: 1,
                })
                .collect(),
            held: [None; 4],
            pending: [false; 4],
            aborted_drain: false,
        }
    }

    fn deliver(&mut self, wakes: impl IntoIterator<Item = Tid>) {
        for t in wakes {
            self.threads[t].woken = true;
        }
    }

    fn moves(&self) -> Vec<(Tid, Move)> {
        let mut out = Vec::new();
        for (tid, t) in self.threads.iter().enumerate() {
            let blocked = match t.phase {
                Phase::Finished => continue,
                Phase::Getting { blocked, .. } | Phase::Draining { blocked, .. } => blocked,
                _ => false,
            };
            if !blocked || t.woken {
                out.push((tid, Move::Step));
            } else if t.spurious_left > 0 {
                out.push((tid, Move::Spurious));
            }
            // A pending `get` may be dropped whether or not it was woken meanwhile.
            if blocked
                && matches!(t.phase, Phase::Getting { .. })
                && matches!(t.ops[t.pc], Op::Worker { cancellable: true })
            {
                out.push((tid, Move::Cancel));
            }
        }
        out
    }

    fn next_op(&mut self, tid: Tid) {
        let t = &mut self.threads[tid];
        t.pc += 1;
        t.phase = if t.pc == t.ops.len() {
            Phase::Finished
        } else {
            Phase::Start
        };
    }

    fn apply(&mut self, tid: Tid, mv: Move) {
        let now = tokio::time::Instant::now;
        if let Move::Spurious = mv {
            self.threads[tid].spurious_left -= 1;
        }
        self.threads[tid].woken = false;
        let op = self.threads[tid].ops[self.threads[tid].pc];
        match (self.threads[tid].phase, op) {
            (Phase::Start, Op::Add(x) | Op::AddHigh(x)) => {
                if !self.core.is_shutting_down() {
                    self.pending[x as usize] = true;
                }
                let h = self.core.hash(&x);
                let priority = if matches!(op, Op::AddHigh(_)) { 5 } else { 0 };
                let w = self.core.add(x, h, priority, now);
                self.deliver(w);
                self.next_op(tid);
            }
            (Phase::Start, Op::Shutdown) => {
                self.aborted_drain = true;
                let w = self.core.shutdown();
                self.deliver(w.into_iter());
                self.next_op(tid);
            }
            (Phase::Start, Op::Worker { .. }) => {
                self.threads[tid].phase = Phase::Getting {
                    key: None,
                    blocked: false,
                };
                self.apply(tid, Move::Step);
            }
            (Phase::Getting { mut key, .. }, Op::Worker { .. }) => {
                if let Move::Cancel = mv {
                    let k = key.expect("a blocked getter is registered");
                    let w = self.core.cancel_get(k);
                    self.deliver(w);
                    self.threads[tid].phase = Phase::Finished;
                    return;
                }
                match self.core.poll_get(&mut key, || tid, now) {
                    GetPoll::Item(x, _) => {
                        assert_eq!(self.held[x as usize], None, "item {x} held twice");
                        self.held[x as usize] = Some(tid);
                        self.pending[x as usize] = false;
                        self.threads[tid].phase = Phase::Holding(x);
                    }
                    GetPoll::Shutdown => {
                        assert_eq!(key, None);
                        self.next_op(tid);
                    }
                    GetPoll::Wait => {
                        self.threads[tid].phase = Phase::Getting { key, blocked: true };
                    }
                }
            }
            (Phase::Holding(x), Op::Worker { .. }) => {
                self.held[x as usize] = None;
                let h = self.core.hash(&x);
                let w = self.core.done(&x, h, now);
                self.deliver(w.into_iter());
                self.threads[tid].phase = Phase::Getting {
                    key: None,
                    blocked: false,
                };
            }
            (Phase::Start, Op::Drain) => {
                let w = self.core.shutdown_with_drain();
                self.deliver(w.into_iter());
                self.aborted_drain = false;
                self.threads[tid].phase = Phase::Draining {
                    started: true,
                    blocked: false,
                };
            }
            (Phase::Draining { started: true, .. }, Op::Drain) => {
                if self.core.poll_drain(|| tid) {
                    if !self.aborted_drain {
                        assert!(self.core.is_idle(), "drain finished with work left");
                        assert!(self.held.iter().all(Option::is_none));
                    }
                    self.next_op(tid);
                } else {
                    self.threads[tid].phase = Phase::Draining {
                        started: true,
                        blocked: true,
                    };
                }
            }
            (phase, op) => unreachable!("thread {tid} in {phase:?} running {op:?}"),
        }
    }
}

impl World {
    fn snapshot(&self) -> String {
        let threads: Vec<_> = self
            .threads
            .iter()
            .map(|t| (t.pc, t.phase, t.woken, t.spurious_left))
            .collect();
        format!(
            "{}|{threads:?}|{:?}|{:?}|{}",
            self.core.snapshot(),
            self.held,
            self.pending,
            self.aborted_drain
        )
    }

    /// No stall: while items are queued, a sleeping getter implies some getter is awake to
    /// take them (client-go's one `Signal` per push; catches a wake-up lost mid-run, which a
    /// later shutdown broadcast would otherwise mask).
    fn check_no_stall(&self) {
        if self.core.len() == 0 {
            return;
        }
        let getting = |t: &&Thread| matches!(t.phase, Phase::Getting { .. });
        let asleep =
            |t: &&Thread| matches!(t.phase, Phase::Getting { blocked: true, .. }) && !t.woken;
        if self.threads.iter().filter(getting).any(|t| asleep(&t)) {
            assert!(
                self.threads.iter().filter(getting).any(|t| !asleep(&t)),
                "items queued while every getter sleeps: {:?}",
                self.threads
            );
        }
    }

    fn check_complete(&self) {
        for (tid, t) in self.threads.iter().enumerate() {
            assert_eq!(
                t.phase,
                Phase::Finished,
                "thread {tid} stuck (lost wake-up or hung drain): {t:?}"
            );
        }
        assert_eq!(self.core.len(), 0, "items left queued");
        assert!(
            self.pending.iter().all(|p| !p),
            "an accepted add was never processed: {:?}",
            self.pending
        );
    }
}

/// Explores every reachable state (depth-first, each distinct state once); returns the number
/// of distinct states and of terminal ones. Every terminal state is checked.
fn explore(start: World) -> (usize, usize) {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![start];
    let mut terminal = 0;
    while let Some(w) = stack.pop() {
        if !seen.insert(w.snapshot()) {
            continue;
        }
        let moves = w.moves();
        if moves.iter().all(|(_, m)| !matches!(m, Move::Step)) {
            // No thread can make normal progress: the execution is complete.
            w.check_complete();
            terminal += 1;
        }
        for (tid, mv) in moves {
            let mut next = w.clone();
            next.apply(tid, mv);
            next.core.check_invariants();
            next.check_no_stall();
            stack.push(next);
        }
    }
    (seen.len(), terminal)
}

fn run(scripts: &[&'static [Op]]) {
    let (states, terminal) = explore(World::new(scripts));
    assert!(
        states > 100 && terminal > 1,
        "scenario explored only {states} states, {terminal} terminal"
    );
}

const WORKER: Op = Op::Worker { cancellable: false };
const CANCELLABLE: Op = Op::Worker { cancellable: true };

#[test]
fn adds_and_shutdown_race_with_two_workers() {
    run(&[
        &[Op::Add(0), Op::Add(1)],
        &[Op::Add(0), Op::Shutdown],
        &[WORKER],
        &[WORKER],
    ]);
}

#[test]
fn readd_while_processing_with_drain() {
    run(&[
        &[Op::Add(0), Op::Add(0), Op::Add(1)],
        &[Op::Add(0), Op::Drain],
        &[WORKER],
        &[WORKER],
    ]);
}

#[test]
fn cancelled_getter_passes_its_wakeup_on() {
    run(&[
        &[Op::Add(0), Op::Add(1), Op::Add(0)],
        &[Op::Drain],
        &[CANCELLABLE],
        &[WORKER],
    ]);
}

#[test]
fn shutdown_aborts_a_pending_drain() {
    run(&[
        &[Op::Add(0), Op::Add(1)],
        &[Op::Drain],
        &[Op::Add(1), Op::Shutdown],
        &[WORKER],
    ]);
}

#[test]
fn three_workers_one_key() {
    run(&[
        &[Op::Add(0), Op::Add(0), Op::Add(0), Op::Drain],
        &[WORKER],
        &[WORKER],
        &[CANCELLABLE],
    ]);
}

#[test]
fn raised_priorities_race_with_processing() {
    run(&[
        &[Op::Add(0), Op::Add(1), Op::AddHigh(1)],
        &[Op::AddHigh(0), Op::Add(0), Op::Drain],
        &[WORKER],
        &[WORKER],
    ]);
}

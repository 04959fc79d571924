//! The connection cap: the connections held, oldest first, by what they are doing (waiting for
//! their request or lingering after their answer, or being answered). A new connection always
//! gets in, by closing the oldest waiting one (else the oldest being answered), so the accept
//! loop never writes, waits or refuses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Connections held at once (fewer where the descriptor limit is lower: each takes two).
pub const MAX_CONNS: usize = 1024;

pub(crate) struct Conns {
    cap: usize,
    inner: Mutex<ConnsInner>,
}

#[derive(Default)]
struct ConnsInner {
    next: u64,
    waiting: BTreeMap<u64, Arc<Notify>>,
    answering: BTreeMap<u64, Arc<Notify>>,
}

/// A held connection; `kill` is notified when a newer one needs its place.
pub(crate) struct Slot {
    id: u64,
    pub(crate) kill: Arc<Notify>,
    conns: Arc<Conns>,
}

impl Conns {
    /// At most `cap` connections.
    fn new(cap: usize) -> Conns {
        Conns {
            cap,
            inner: Mutex::default(),
        }
    }

    /// As many as the descriptor limit allows (raised to its hard limit first), two each, 64
    /// kept for the rest of the process; at least 8, at most [`MAX_CONNS`].
    pub(crate) fn sized_to_descriptors() -> Conns {
        Conns::new((descriptors().saturating_sub(64) / 2).clamp(8, MAX_CONNS))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConnsInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hold a new connection, closing the oldest waiting one (else the oldest being answered)
    /// when all places are taken.
    pub(crate) fn admit(self: &Arc<Self>) -> Slot {
        let mut c = self.lock();
        if c.waiting.len() + c.answering.len() >= self.cap {
            let victim = c.waiting.pop_first().or_else(|| c.answering.pop_first());
            if let Some((_, kill)) = victim {
                kill.notify_one();
            }
        }
        let id = c.next;
        c.next += 1;
        let kill = Arc::new(Notify::new());
        c.waiting.insert(id, Arc::clone(&kill));
        Slot {
            id,
            kill,
            conns: Arc::clone(self),
        }
    }
}

impl Slot {
    /// Move to the answered connections (`true`) or back to the waiting ones.
    pub(crate) fn answering(&self, yes: bool) {
        let mut c = self.conns.lock();
        let (from, to) = if yes {
            let c = &mut *c;
            (&mut c.waiting, &mut c.answering)
        } else {
            let c = &mut *c;
            (&mut c.answering, &mut c.waiting)
        };
        if let Some(k) = from.remove(&self.id) {
            to.insert(self.id, k);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.conns.lock();
        c.waiting.remove(&self.id);
        c.answering.remove(&self.id);
    }
}

/// The open-descriptor limit, raised to its hard limit first (as Go servers do at start).
fn descriptors() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the calls to read and write.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;

    #[test]
    fn a_new_connection_takes_the_place_of_the_oldest_waiting_one() {
        let conns = Arc::new(Conns::new(3));
        let a = conns.admit();
        let b = conns.admit();
        let c = conns.admit();
        a.answering(true);
        // Full: b (the oldest still waiting) is told to go, not a (being answered).
        let d = conns.admit();
        let told = |s: &Slot| {
            let n = s.kill.notified();
            let mut n = pin!(n);
            n.as_mut().enable()
        };
        assert!(told(&b) && !told(&a) && !told(&c));
        drop(b);
        // c and d wait, a is answered; with c and d answered too, the oldest answered goes.
        c.answering(true);
        d.answering(true);
        let _e = conns.admit();
        assert!(told(&a) && !told(&c) && !told(&d));
    }
}

//! Ctrl-C handling shared by long-running commands: one place registers SIGINT/SIGTERM.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// SIGINT/SIGTERM set the returned flag (the run stops cleanly); a second one ends the program
/// at once (exit 130).
pub fn cancel_on_signals() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&cancel));
        let _ = signal_hook::flag::register(sig, Arc::clone(&cancel));
    }
    cancel
}

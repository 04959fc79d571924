//! The web config in force, re-read when its file or the certificate and key it names change,
//! as the exporter-toolkit re-reads its file on every request: a rotated certificate serves the
//! next handshake, a removed user or a changed password fails the next request, no restart.
//! Each new TLS connection and each request asks for it; a `stat` per file tells whether
//! anything changed (`versions`), and only then is it read and parsed again, so a scrape shares
//! the config (and the users' remembered credentials) loaded before.
//!
//! A file that no longer loads fails closed, as the toolkit does: TLS handshakes are refused
//! and requests answered 500 until it loads again. One line on stderr tells each change (what
//! is wrong, or that it loaded). TLS on or off stays as it was at start: a listener does not
//! switch between https and http, so a file that would switch it is refused like a broken one.

use crate::auth::Users;
use crate::versions::Versions;
use crate::web_config::{self, bad, WebConfig};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// What a connection is served with.
pub(crate) struct InForce {
    /// Present exactly when the server was started with TLS.
    pub(crate) tls: Option<TlsAcceptor>,
    pub(crate) users: Arc<Users>,
}

/// The config in force and where it came from.
pub(crate) struct Live {
    /// The file, when the config came from one.
    file: Option<PathBuf>,
    tls: bool,
    bcrypt: Arc<Semaphore>,
    state: Mutex<State>,
}

struct State {
    /// The files the last reading read (good or not).
    versions: Option<Versions>,
    /// The last config that loaded.
    good: Arc<InForce>,
    /// Whether the last reading failed: nothing is served until one loads.
    broken: bool,
}

impl Live {
    /// `web` in force, bcrypt checks run with the turns of `bcrypt`.
    pub(crate) fn new(web: WebConfig, bcrypt: Arc<Semaphore>) -> Live {
        let (file, versions) = web.file.map_or((None, None), |(f, v)| (Some(f), Some(v)));
        Live {
            file,
            tls: web.tls.is_some(),
            state: Mutex::new(State {
                versions,
                good: Arc::new(InForce {
                    tls: web.tls.map(TlsAcceptor::from),
                    users: Arc::new(Users::new(web.users, Arc::clone(&bcrypt))),
                }),
                broken: false,
            }),
            bcrypt,
        }
    }

    /// Whether connections are served over TLS (fixed at start).
    pub(crate) fn tls(&self) -> bool {
        self.tls
    }

    /// The config in force, re-read first when a file it came from changed; `None` while the
    /// file does not load.
    pub(crate) fn current(&self) -> Option<Arc<InForce>> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(file) = &self.file {
            if s.versions.as_ref().is_none_or(Versions::stale) {
                self.reread(file, &mut s);
            }
        }
        (!s.broken).then(|| Arc::clone(&s.good))
    }

    /// Read `file` again; act on it (and tell stderr) only when what was read differs from the
    /// last reading.
    fn reread(&self, file: &Path, s: &mut State) {
        let (config, versions) = web_config::reload(file);
        let same = s.versions.as_ref().is_some_and(|v| v.same_contents(&versions));
        s.versions = Some(versions);
        if same {
            return;
        }
        let config = config.and_then(|c| match (self.tls, c.tls.is_some()) {
            (true, false) => Err(bad(
                file,
                "tls_server_config: TLS was on at start; serving plain HTTP needs a restart",
            )),
            (false, true) => Err(bad(
                file,
                "tls_server_config: TLS was off at start; serving TLS needs a restart",
            )),
            _ => Ok(c),
        });
        match config {
            Ok(c) => {
                let users = if s.good.users.are(&c.users) {
                    Arc::clone(&s.good.users)
                } else {
                    Arc::new(Users::new(c.users, Arc::clone(&self.bcrypt)))
                };
                s.good = Arc::new(InForce {
                    tls: c.tls.map(TlsAcceptor::from),
                    users,
                });
                s.broken = false;
                eprintln!("web config {}: changed, re-read and in force", file.display());
            }
            Err(e) => {
                s.broken = true;
                eprintln!("warning: web config {e}; new connections and requests fail until it loads again");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::fs;
    use std::time::{Duration, SystemTime};

    /// Write `text` dated a minute ago (read once, not again when settled).
    fn write(path: &std::path::Path, text: &str) {
        let tmp = path.with_extension("tmp");
        fs::write(&tmp, text).unwrap();
        let f = fs::File::options().write(true).open(&tmp).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
        fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn users_follow_the_file_broken_fails_closed_and_same_contents_keep_what_is_remembered() {
        let d = std::env::temp_dir().join(format!("pcie-exporter-live-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        let file = d.join("web.yml");
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let two = format!("basic_auth_users:\n  a: '{hash}'\n  b: '{hash}'\n");
        write(&file, &two);
        let live = Live::new(web_config::load(&file).unwrap(), Arc::new(Semaphore::new(2)));
        let first = live.current().unwrap();
        assert!(
            Arc::ptr_eq(&first, &live.current().unwrap()),
            "unchanged: the same config"
        );
        // The same text in a new file: nothing to act on.
        write(&file, &two);
        assert!(Arc::ptr_eq(&first, &live.current().unwrap()));
        // One user less: new users.
        write(&file, &format!("basic_auth_users:\n  a: '{hash}'\n"));
        let second = live.current().unwrap();
        assert!(!Arc::ptr_eq(&first.users, &second.users));
        assert!(second.users.are(&BTreeMap::from([("a".to_string(), hash.clone())])));
        // Broken: nothing in force, until it loads again.
        write(&file, "basic_auth_users: [\n");
        assert!(live.current().is_none());
        assert!(live.current().is_none());
        write(&file, &format!("basic_auth_users:\n  a: '{hash}'\n"));
        let third = live.current().unwrap();
        assert!(
            Arc::ptr_eq(&second.users, &third.users),
            "the same users keep what they remember"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}

//! Basic authentication against the web config's bcrypt hashes. A bcrypt check costs tens of
//! milliseconds of CPU: at most [`BCRYPT_AT_ONCE`] run at once, on blocking threads so the
//! connections' thread keeps answering, and credentials that passed are remembered (by digest)
//! so a scrape does not pay for one each time.

use hyper::header::{HeaderValue, AUTHORIZATION};
use hyper::Request;
use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use tokio::sync::Semaphore;

/// Password checks run at most this many at once (the runtime's blocking threads too).
pub(crate) const BCRYPT_AT_ONCE: usize = 2;
/// Remembered good credentials.
const REMEMBERED: usize = 256;

/// The users who may read, and what is known of their credentials.
pub(crate) struct Users {
    /// User name to bcrypt hash; empty: no authentication.
    hashes: BTreeMap<String, String>,
    /// Digests of credentials that passed their bcrypt check.
    remembered: Mutex<HashSet<Vec<u8>>>,
    bcrypt: Semaphore,
}

impl Users {
    pub(crate) fn new(hashes: BTreeMap<String, String>) -> Users {
        Users {
            hashes,
            remembered: Mutex::default(),
            bcrypt: Semaphore::new(BCRYPT_AT_ONCE),
        }
    }

    /// Whether the request carries the credentials of a configured user (always, when none
    /// is configured).
    pub(crate) async fn authorised<B>(&self, req: &Request<B>) -> bool {
        if self.hashes.is_empty() {
            return true;
        }
        let Some((user, password)) = req.headers().get(AUTHORIZATION).and_then(basic_credentials) else {
            return false;
        };
        let Some(hash) = self.hashes.get(&user) else {
            return false;
        };
        let key = {
            let mut d = ring::digest::Context::new(&ring::digest::SHA256);
            for part in [user.as_bytes(), password.as_bytes(), hash.as_bytes()] {
                d.update(&(part.len() as u64).to_le_bytes());
                d.update(part);
            }
            d.finish().as_ref().to_vec()
        };
        let lock = || self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if lock().contains(&key) {
            return true;
        }
        let Ok(_turn) = self.bcrypt.acquire().await else {
            return false;
        };
        let hash = hash.clone();
        let ok = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
            .await
            .unwrap_or(false);
        if ok {
            let mut m = lock();
            if m.len() >= REMEMBERED {
                m.clear();
            }
            m.insert(key);
        }
        ok
    }
}

/// `Authorization: Basic BASE64(user:password)`'s user and password.
fn basic_credentials(v: &HeaderValue) -> Option<(String, String)> {
    use base64::Engine;
    let (scheme, value) = v.to_str().ok()?.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(value.trim()).ok()?;
    let (user, password) = String::from_utf8(raw)
        .ok()?
        .split_once(':')
        .map(|(u, p)| (u.to_string(), p.to_string()))?;
    Some((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_read_as_sent() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        // "prometheus:pa:ss" (a password may hold colons).
        assert_eq!(
            basic_credentials(&h("Basic cHJvbWV0aGV1czpwYTpzcw==")),
            Some(("prometheus".into(), "pa:ss".into()))
        );
        assert_eq!(
            basic_credentials(&h("basic cHJvbWV0aGV1czpwYTpzcw==")).unwrap().0,
            "prometheus"
        );
        assert_eq!(basic_credentials(&h("Bearer cHJvbWV0aGV1czpwYTpzcw==")), None);
        assert_eq!(basic_credentials(&h("Basic !!!")), None);
        assert_eq!(basic_credentials(&h("Basic bm9jb2xvbg==")), None, "no colon");
    }
}

//! Basic authentication against the web config's bcrypt hashes. A bcrypt check costs tens of
//! milliseconds of CPU: at most [`BCRYPT_AT_ONCE`] run at once, on blocking threads so the
//! connections' thread keeps answering, and credentials that passed are remembered (by digest)
//! so a scrape does not pay for one each time. An unknown user costs a check too, against a
//! dummy hash of the users' cost, so the time to a 401 does not tell which names exist.

use hyper::header::{HeaderValue, AUTHORIZATION};
use hyper::Request;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Password checks run at most this many at once (the runtime's blocking threads too).
pub(crate) const BCRYPT_AT_ONCE: usize = 2;
/// Remembered good credentials.
const REMEMBERED: usize = 256;

/// The users who may read, and what is known of their credentials. Made anew when the users
/// change (a reloaded web config), so a removed user's or an old password's remembered pass
/// goes with them.
pub(crate) struct Users {
    /// User name to bcrypt hash; empty: no authentication.
    hashes: BTreeMap<String, String>,
    /// What an unknown user's password is checked against: a hash no password has, at the
    /// highest cost among the users' hashes.
    dummy: String,
    /// Digests of credentials that passed their bcrypt check.
    remembered: Mutex<HashSet<Vec<u8>>>,
    /// The turns to run a bcrypt check, shared by every `Users` a server makes.
    bcrypt: Arc<Semaphore>,
}

/// A bcrypt hash of cost `cost` that no password matches (a salt and a hash of zero bytes), made
/// without running bcrypt: checking a password against it costs what checking against a real
/// hash of that cost does.
fn dummy_hash(cost: u32) -> String {
    format!("$2b${cost:02}${}", ".".repeat(53))
}

impl Users {
    pub(crate) fn new(hashes: BTreeMap<String, String>, bcrypt: Arc<Semaphore>) -> Users {
        let cost = hashes
            .values()
            .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
            .map(|p| p.get_cost())
            .max()
            .unwrap_or(bcrypt::DEFAULT_COST);
        Users {
            hashes,
            dummy: dummy_hash(cost),
            remembered: Mutex::default(),
            bcrypt,
        }
    }

    /// Whether these are the users of `hashes` (a reload that kept them keeps what is
    /// remembered).
    pub(crate) fn are(&self, hashes: &BTreeMap<String, String>) -> bool {
        self.hashes == *hashes
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
            // As slow as a wrong password, then refused whatever the check says.
            self.bcrypt_verify(password, self.dummy.clone()).await;
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
        let ok = self.bcrypt_verify(password, hash.clone()).await;
        if ok {
            let mut m = lock();
            if m.len() >= REMEMBERED {
                m.clear();
            }
            m.insert(key);
        }
        ok
    }

    /// Whether `password` matches `hash`, checked on a blocking thread when a turn is free.
    async fn bcrypt_verify(&self, password: String, hash: String) -> bool {
        let Ok(_turn) = self.bcrypt.acquire().await else {
            return false;
        };
        tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
            .await
            .unwrap_or(false)
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
    use std::future::{poll_fn, Future};
    use std::pin::pin;
    use std::task::Poll;

    fn request(credentials: &str) -> Request<()> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(credentials);
        Request::builder()
            .header(AUTHORIZATION, format!("Basic {b64}"))
            .body(())
            .unwrap()
    }

    #[test]
    fn the_dummy_hash_is_a_bcrypt_hash_of_the_users_highest_cost_that_nothing_matches() {
        let hashes = BTreeMap::from([
            ("a".to_string(), bcrypt::hash("x", 4).unwrap()),
            ("b".to_string(), bcrypt::hash("y", 5).unwrap()),
        ]);
        let users = Users::new(hashes, Arc::new(Semaphore::new(BCRYPT_AT_ONCE)));
        let parts: bcrypt::HashParts = users.dummy.parse().unwrap();
        assert_eq!(parts.get_cost(), 5);
        // Checked to the end (a malformed hash would be an error before any work).
        assert!(!bcrypt::verify("y", &users.dummy).unwrap());
        assert!(!bcrypt::verify("", &users.dummy).unwrap());
    }

    #[test]
    fn an_unknown_user_waits_for_a_bcrypt_check_as_a_wrong_password_does() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let hashes = BTreeMap::from([("prometheus".to_string(), bcrypt::hash("s3cret", 4).unwrap())]);
        let users = Users::new(hashes, Arc::new(Semaphore::new(BCRYPT_AT_ONCE)));
        rt.block_on(async {
            // With every bcrypt turn taken, neither is answered: both wait for a check.
            let turns = users.bcrypt.acquire_many(BCRYPT_AT_ONCE as u32).await.unwrap();
            for credentials in ["prometheus:wrong", "nobody:s3cret", "nobody:wrong"] {
                let req = request(credentials);
                let mut check = pin!(users.authorised(&req));
                let first = poll_fn(|cx| Poll::Ready(check.as_mut().poll(cx).is_pending())).await;
                assert!(first, "{credentials}: answered without a bcrypt check");
            }
            drop(turns);
            assert!(!users.authorised(&request("nobody:s3cret")).await);
            assert!(!users.authorised(&request("prometheus:wrong")).await);
            assert!(users.authorised(&request("prometheus:s3cret")).await);
            // A request without credentials needs no check: refused at once.
            let _turns = users.bcrypt.acquire_many(BCRYPT_AT_ONCE as u32).await.unwrap();
            assert!(!users.authorised(&Request::new(())).await);
            // Remembered: no check either.
            assert!(users.authorised(&request("prometheus:s3cret")).await);
        });
    }

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

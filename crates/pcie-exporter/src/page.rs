//! A response body: shared buffers, written in [`CHUNK`]-sized slices of them (no copy), so a
//! slow reader holds a reference to the page it started on, never a copy of it.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A page is handed to the connection in slices of this size.
const CHUNK: usize = 64 * 1024;

pub(crate) struct Page(VecDeque<Bytes>);

impl Page {
    pub(crate) fn of(parts: impl IntoIterator<Item = Bytes>) -> Page {
        Page(parts.into_iter().collect())
    }
    pub(crate) fn text(s: &'static str) -> Page {
        Page::of([Bytes::from_static(s.as_bytes())])
    }
}

impl Body for Page {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        while let Some(front) = self.0.front_mut() {
            if front.is_empty() {
                self.0.pop_front();
                continue;
            }
            let n = front.len().min(CHUNK);
            return Poll::Ready(Some(Ok(Frame::data(front.split_to(n)))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.0.iter().all(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_sliced_without_copies_and_knows_its_length() {
        let big = Bytes::from(vec![7u8; CHUNK * 2 + 5]);
        let mut page = Page::of([big.clone(), Bytes::new(), Bytes::from_static(b"tail")]);
        assert_eq!(page.size_hint().exact(), Some((CHUNK * 2 + 9) as u64));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut sizes = Vec::new();
        while let Poll::Ready(Some(Ok(f))) = Pin::new(&mut page).poll_frame(&mut cx) {
            let d = f.into_data().unwrap();
            if sizes.is_empty() {
                // A slice of the shared buffer, not a copy of it.
                assert_eq!(d.as_ptr(), big.as_ptr());
            }
            sizes.push(d.len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, 5, 4]);
        assert!(page.is_end_stream());
    }
}

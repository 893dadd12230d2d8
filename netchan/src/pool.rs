//! A bounded free list of byte buffers, so steady-state traffic reuses
//! allocations instead of making new ones per message.

/// Recycled `Vec<u8>` buffers.
///
/// Buffers handed out in events can be given back with
/// [`crate::Endpoint::recycle`]; the pool keeps at most `max_buffers` of them
/// and drops buffers larger than `max_capacity` so one huge message does not
/// pin memory forever.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Vec<u8>>,
    max_buffers: usize,
    max_capacity: usize,
}

impl BufPool {
    /// An empty pool keeping at most `max_buffers` buffers of at most `max_capacity` bytes.
    pub fn new(max_buffers: usize, max_capacity: usize) -> Self {
        Self {
            free: Vec::new(),
            max_buffers,
            max_capacity,
        }
    }

    /// An empty buffer, recycled when possible.
    pub fn take(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// A buffer holding a copy of `bytes`.
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut v = self.take();
        v.extend_from_slice(bytes);
        v
    }

    /// Returns a buffer to the pool.
    pub fn give(&mut self, mut buf: Vec<u8>) {
        if self.free.len() < self.max_buffers && buf.capacity() <= self.max_capacity {
            buf.clear();
            self.free.push(buf);
        }
    }

    /// Buffers currently pooled.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// `true` when no buffer is pooled.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }
}

impl Default for BufPool {
    fn default() -> Self {
        Self::new(1024, 64 * 1024)
    }
}

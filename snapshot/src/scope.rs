//! Scoping (the TRIBES ghost manager's question): which entities does a
//! client see, and how much does each matter?
//!
//! The game answers per client and entity through [`Scope`]. Entities
//! marked with [`Server::set_always_in_scope`](crate::Server::set_always_in_scope)
//! skip the question and come first. When a snapshot would exceed the
//! client's budget, entities are sent in priority order and the ones left out
//! add their priority to an accumulator, so a low-priority entity is only
//! delayed, never starved.

use crate::server::ClientId;

/// Decides which entities a client sees.
pub trait Scope<E, P> {
    /// The priority of entity `number` (state `entity`) for `viewer`, whose
    /// player state is `player`; `None` if the viewer should not see it.
    /// Higher goes first when the budget is short; negative and NaN count as 0.
    fn priority(&mut self, viewer: ClientId, player: &P, number: u32, entity: &E) -> Option<f32>;

    /// The answer for every entity at once, when it does not depend on the
    /// entity: `Some(priority)` puts every live entity in `viewer`'s scope
    /// at that priority, sparing one [`priority`](Self::priority) call per
    /// client and entity (a cost of the order of comparing the entity's
    /// bytes). `None`, the default, asks per entity.
    fn uniform_priority(&mut self, viewer: ClientId, player: &P) -> Option<f32> {
        let _ = (viewer, player);
        None
    }
}

impl<E, P, F> Scope<E, P> for F
where
    F: FnMut(ClientId, &P, u32, &E) -> Option<f32>,
{
    #[inline]
    fn priority(&mut self, viewer: ClientId, player: &P, number: u32, entity: &E) -> Option<f32> {
        self(viewer, player, number, entity)
    }
}

/// Every entity is in scope with priority 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllInScope;

impl<E, P> Scope<E, P> for AllInScope {
    #[inline]
    fn priority(&mut self, _: ClientId, _: &P, _: u32, _: &E) -> Option<f32> {
        Some(1.0)
    }

    #[inline]
    fn uniform_priority(&mut self, _: ClientId, _: &P) -> Option<f32> {
        Some(1.0)
    }
}

/// A priority as the budget selection uses it: finite and non-negative.
#[inline]
pub(crate) fn sanitize(priority: f32) -> f32 {
    if priority.is_nan() || priority < 0.0 {
        0.0
    } else {
        priority.min(f32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_are_sanitized() {
        assert_eq!(sanitize(f32::NAN), 0.0);
        assert_eq!(sanitize(-3.0), 0.0);
        assert_eq!(sanitize(f32::INFINITY), f32::MAX);
        assert_eq!(sanitize(2.5), 2.5);
    }
}

//! What a spectator is shown: the source's player state marked as followed,
//! so a real client interpolates it instead of predicting it from usercmds
//! it does not control (cgame skips prediction when `PMF_FOLLOW` is set).

use crate::tables::PlayerState;

/// Quake 3's `PMF_FOLLOW` movement flag: "spectating, following another
/// player".
pub const PMF_FOLLOW: i32 = 4096;

/// The player state a spectator gets for the source's `ps`: the same, with
/// `PMF_FOLLOW` set. A live source that follows a player already has it;
/// a recording made by a player does not.
pub fn follow_view(ps: &PlayerState) -> PlayerState {
    PlayerState {
        pm_flags: ps.pm_flags | PMF_FOLLOW,
        ..*ps
    }
}

/// Whether a spectator's client will predict `ps` (it must not).
pub fn is_followed(ps: &PlayerState) -> bool {
    ps.pm_flags & PMF_FOLLOW != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_follow_flag_is_added_and_nothing_else_changes() {
        let ps = PlayerState {
            pm_flags: 0x40,
            client_num: 3,
            command_time: 12_345,
            ..PlayerState::default()
        };
        assert!(!is_followed(&ps));
        let view = follow_view(&ps);
        assert!(is_followed(&view));
        assert_eq!(view.pm_flags, 0x40 | PMF_FOLLOW);
        assert_eq!(
            PlayerState {
                pm_flags: ps.pm_flags,
                ..view
            },
            ps
        );
        // Already following: unchanged.
        assert_eq!(follow_view(&view), view);
        // The flag fits the 16-bit wire field.
        assert_eq!(view.pm_flags >> 16, 0);
    }
}

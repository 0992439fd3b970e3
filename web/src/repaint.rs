//! When a `change` event reaches the views. The first change after a quiet
//! frame is shown at once (its DOM is updated before the next frame, as a
//! plain page would); later changes within the same frame wait for that
//! frame and are shown together, so a burst of events costs at most one
//! render per frame, not one per event.
//!
//! Changes that arrive between a snapshot and the frame that first draws it
//! wait for that frame ([`HeldChanges`]).

use std::collections::VecDeque;

/// At most this many changes wait for a snapshot's first frame...
pub const HELD_CHANGES: usize = 1000;
/// ...and at most this many bytes of them: past either, they are all
/// applied at once, as if nothing were held.
pub const HELD_BYTES: usize = 16 << 20;

/// What the caller does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repaint {
    /// Tell the views the store changed.
    Now,
    /// Nothing: a repaint is already due.
    Later,
}

/// Whether a frame has begun since the last repaint, and whether changes wait
/// for the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepaintGate {
    /// A repaint was made in this frame; a frame callback is scheduled.
    in_frame: bool,
    /// Changes arrived after that repaint, in the same frame.
    waiting: bool,
}

impl RepaintGate {
    /// A change arrived. With [`Repaint::Now`] the caller repaints and
    /// schedules [`RepaintGate::on_frame`] for the next animation frame.
    pub fn on_change(&mut self) -> Repaint {
        if self.in_frame {
            self.waiting = true;
            Repaint::Later
        } else {
            self.in_frame = true;
            Repaint::Now
        }
    }

    /// A frame began (the animation-frame callback). [`Repaint::Now`]: the
    /// waiting changes are shown now, and the caller schedules this again
    /// (changes of the new frame wait for its end in turn).
    pub fn on_frame(&mut self) -> Repaint {
        if self.waiting {
            self.waiting = false;
            Repaint::Now
        } else {
            self.in_frame = false;
            Repaint::Later
        }
    }

    /// Whether a frame callback is due (one is scheduled after every
    /// [`Repaint::Now`]).
    pub fn in_frame(&self) -> bool {
        self.in_frame
    }
}

/// The changes that came after a snapshot and before the frame that first
/// draws it. Applying one of them first would build the store's index and
/// draw the table twice before the user sees a row, so they wait, in order,
/// and are applied right after that frame ([`HeldChanges::release`]).
#[derive(Debug, Default)]
pub struct HeldChanges {
    holding: bool,
    texts: VecDeque<String>,
    bytes: usize,
}

impl HeldChanges {
    /// A snapshot is being drawn: changes wait from now on. Changes held
    /// for an earlier snapshot are dropped, since this one replaces them.
    pub fn on_snapshot(&mut self) {
        self.holding = true;
        self.texts.clear();
        self.bytes = 0;
    }

    /// A change's frame text arrived: the texts to apply now, in order
    /// (none while they wait; all of them once the bounds are passed).
    pub fn on_change(&mut self, text: String) -> Vec<String> {
        if !self.holding {
            return vec![text];
        }
        self.bytes += text.len();
        self.texts.push_back(text);
        if self.texts.len() > HELD_CHANGES || self.bytes > HELD_BYTES {
            return self.release();
        }
        Vec::new()
    }

    /// The snapshot's first frame is drawn: every held text, in the order
    /// it came, and changes are applied as they come again.
    pub fn release(&mut self) -> Vec<String> {
        self.holding = false;
        self.bytes = 0;
        self.texts.drain(..).collect()
    }

    pub fn holding(&self) -> bool {
        self.holding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_after_a_snapshot_wait_for_its_frame_in_order() {
        let mut held = HeldChanges::default();
        assert_eq!(
            held.on_change("a".into()),
            vec!["a"],
            "no snapshot: at once"
        );
        held.on_snapshot();
        assert!(held.holding());
        assert!(held.on_change("b".into()).is_empty());
        assert!(held.on_change("c".into()).is_empty());
        assert_eq!(held.release(), vec!["b", "c"]);
        assert!(!held.holding());
        assert_eq!(
            held.on_change("d".into()),
            vec!["d"],
            "after the frame: at once"
        );
        assert!(held.release().is_empty());
    }

    #[test]
    fn a_new_snapshot_drops_the_changes_held_for_the_last() {
        let mut held = HeldChanges::default();
        held.on_snapshot();
        assert!(held.on_change("old".into()).is_empty());
        held.on_snapshot();
        assert!(held.on_change("new".into()).is_empty());
        assert_eq!(held.release(), vec!["new"]);
    }

    #[test]
    fn past_either_bound_every_held_change_is_applied_at_once() {
        let mut held = HeldChanges::default();
        held.on_snapshot();
        for i in 0..HELD_CHANGES {
            assert!(held.on_change(i.to_string()).is_empty(), "{i} is held");
        }
        let all = held.on_change("last".into());
        assert_eq!(all.len(), HELD_CHANGES + 1);
        assert_eq!(all.first().map(String::as_str), Some("0"));
        assert_eq!(all.last().map(String::as_str), Some("last"));
        assert!(!held.holding(), "and the rest come as they come");

        held.on_snapshot();
        assert!(held.on_change("x".repeat(HELD_BYTES / 2)).is_empty());
        assert_eq!(
            held.on_change("y".repeat(HELD_BYTES / 2 + 1)).len(),
            2,
            "bytes bound"
        );
    }

    #[test]
    fn a_change_after_a_quiet_frame_is_shown_at_once() {
        let mut gate = RepaintGate::default();
        assert_eq!(gate.on_change(), Repaint::Now);
        assert!(gate.in_frame());
        assert_eq!(gate.on_frame(), Repaint::Later);
        assert!(!gate.in_frame());
        assert_eq!(gate.on_change(), Repaint::Now);
    }

    #[test]
    fn a_burst_costs_one_repaint_now_and_one_at_the_next_frame() {
        let mut gate = RepaintGate::default();
        let now: Vec<Repaint> = (0..50).map(|_| gate.on_change()).collect();
        assert_eq!(now.iter().filter(|r| **r == Repaint::Now).count(), 1);
        assert_eq!(gate.on_frame(), Repaint::Now, "the burst's rest is shown");
        assert!(gate.in_frame(), "and the next frame is watched in turn");
        assert_eq!(gate.on_change(), Repaint::Later);
        assert_eq!(gate.on_frame(), Repaint::Now);
        assert_eq!(gate.on_frame(), Repaint::Later, "a quiet frame ends it");
        assert_eq!(gate.on_change(), Repaint::Now);
    }
}

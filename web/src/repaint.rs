//! When a `change` event reaches the views. The first change after a quiet
//! frame is shown at once (its DOM is updated before the next frame, as a
//! plain page would); later changes within the same frame wait for that
//! frame and are shown together, so a burst of events costs at most one
//! render per frame, not one per event.

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

#[cfg(test)]
mod tests {
    use super::*;

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

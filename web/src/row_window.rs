//! Which of the table's rows are drawn. A namespace of 10,000 TrainJobs is
//! 10,000 rows of eleven cells: drawing them all costs seconds and
//! hundreds of thousands of elements. The table draws the rows in view and
//! a margin on either side, and stands the rest in for by its body's
//! padding, so the scroll bar is the whole table's. Rows have one height
//! (their cells do not wrap), which makes where a row is a product.
//!
//! A short table is drawn whole, so find-in-page still sees every row of
//! it; past [`DRAWN_WHOLE_UP_TO`] the page says that Search is what finds
//! a row.

use std::ops::Range;

/// Tables of at most this many rows are drawn whole.
pub const DRAWN_WHOLE_UP_TO: usize = 150;

/// Rows drawn beyond the view on either side, at least: room for a
/// keyboard's step and a fast wheel between two redraws.
pub const MARGIN_ROWS: usize = 50;

/// The row height assumed before one is measured, in CSS pixels.
pub const ROW_HEIGHT_GUESS: f64 = 34.0;

/// Where the table's rows are against the window, in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    /// How far the top of the first row is above the top of the view
    /// (negative while the table starts below it).
    pub scrolled: f64,
    /// The view's height.
    pub view: f64,
    /// One row's height.
    pub row: f64,
}

/// The rows drawn, with what stands in for the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowWindow {
    pub drawn: Range<usize>,
    /// Rows not drawn above and below the drawn ones.
    pub above: usize,
    pub below: usize,
}

impl RowWindow {
    /// The rows to draw of `count` rows for `geometry`.
    pub fn of(count: usize, geometry: Geometry) -> RowWindow {
        if count <= DRAWN_WHOLE_UP_TO {
            return RowWindow::whole(count);
        }
        let visible = visible_rows(count, geometry);
        let margin = MARGIN_ROWS.max(visible.len());
        let start = visible.start.saturating_sub(margin);
        let end = visible.end.saturating_add(margin).min(count);
        RowWindow {
            drawn: start..end,
            above: start,
            below: count - end,
        }
    }

    fn whole(count: usize) -> RowWindow {
        RowWindow {
            drawn: 0..count,
            above: 0,
            below: 0,
        }
    }

    /// Whether the rows in view for `geometry` are far enough into the
    /// margin that the window should move: a scroll by less than half the
    /// margin redraws nothing. A table whose row count changed always
    /// redraws.
    pub fn should_move(&self, count: usize, geometry: Geometry) -> bool {
        if self.above + self.drawn.len() + self.below != count {
            return true;
        }
        let wanted = RowWindow::of(count, geometry);
        if wanted.drawn == self.drawn {
            return false;
        }
        let visible = visible_rows(count, geometry);
        let slack = MARGIN_ROWS / 2;
        let short_above = self.drawn.start > 0 && visible.start < self.drawn.start + slack;
        let short_below = self.drawn.end < count && visible.end + slack > self.drawn.end;
        short_above || short_below
    }
}

/// The rows at least partly in view.
fn visible_rows(count: usize, geometry: Geometry) -> Range<usize> {
    let row = if geometry.row.is_finite() && geometry.row >= 1.0 {
        geometry.row
    } else {
        ROW_HEIGHT_GUESS
    };
    let view = if geometry.view.is_finite() {
        geometry.view.max(0.0)
    } else {
        0.0
    };
    let scrolled = if geometry.scrolled.is_finite() {
        geometry.scrolled
    } else {
        0.0
    };
    // Whole rows, clamped to the table: floats far out of range saturate.
    let first = (scrolled / row).floor().max(0.0) as usize;
    let last = ((scrolled + view) / row).ceil().max(0.0) as usize;
    let first = first.min(count);
    first..last.clamp(first, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::Rng;

    fn at(scrolled: f64) -> Geometry {
        Geometry {
            scrolled,
            view: 900.0,
            row: 30.0,
        }
    }

    #[test]
    fn a_short_table_is_drawn_whole() {
        for count in [0, 1, DRAWN_WHOLE_UP_TO] {
            let w = RowWindow::of(count, at(5000.0));
            assert_eq!(w.drawn, 0..count);
            assert_eq!((w.above, w.below), (0, 0));
        }
    }

    #[test]
    fn a_long_table_draws_the_view_and_a_margin_and_pads_the_rest() {
        // At the top: 30 rows in view, 50 more below.
        let top = RowWindow::of(10_000, at(-200.0));
        assert_eq!(top.drawn, 0..74);
        assert_eq!(top.below, 10_000 - 74);
        // Midway: 30 in view from row 1,000, 50 either side.
        let mid = RowWindow::of(10_000, at(30_000.0));
        assert_eq!(mid.drawn, 950..1080);
        assert_eq!((mid.above, mid.below), (950, 10_000 - 1080));
        // At the end.
        let end = RowWindow::of(10_000, at(30.0 * 10_000.0 - 900.0));
        assert_eq!(end.drawn, 9920..10_000);
        assert_eq!(end.below, 0);
        // Scrolled past the table: its last rows, never a range out of it.
        let past = RowWindow::of(10_000, at(1e12));
        assert_eq!(past.drawn, 9950..10_000);
    }

    #[test]
    fn a_tall_view_draws_as_much_margin_as_it_shows() {
        let tall = Geometry {
            scrolled: 60_000.0,
            view: 3_000.0,
            row: 30.0,
        };
        let w = RowWindow::of(10_000, tall);
        assert_eq!(w.drawn, 1900..2200);
    }

    #[test]
    fn nonsense_geometry_draws_from_the_top() {
        for g in [
            Geometry {
                scrolled: f64::NAN,
                view: f64::INFINITY,
                row: 0.0,
            },
            Geometry {
                scrolled: f64::NEG_INFINITY,
                view: -5.0,
                row: f64::NAN,
            },
        ] {
            let w = RowWindow::of(1_000, g);
            assert_eq!(w.drawn.start, 0, "{g:?}");
            assert!(w.drawn.end <= 1_000);
            assert_eq!(w.above + w.drawn.len() + w.below, 1_000);
        }
    }

    #[test]
    fn a_small_scroll_moves_nothing_and_a_large_one_moves_the_window() {
        let w = RowWindow::of(10_000, at(30_000.0));
        assert!(!w.should_move(10_000, at(30_000.0)));
        assert!(!w.should_move(10_000, at(30_000.0 + 10.0 * 30.0)));
        assert!(w.should_move(10_000, at(30_000.0 + 40.0 * 30.0)));
        assert!(w.should_move(10_000, at(30_000.0 - 40.0 * 30.0)));
        // The rows changed in number: drawn again wherever the view is.
        assert!(w.should_move(9_999, at(30_000.0)));
    }

    #[test]
    fn seeded_geometries_keep_the_view_drawn_and_the_padding_whole() {
        let mut rng = Rng::new(30);
        for _ in 0..5_000 {
            let count = rng.below(20_000);
            let row = 20.0 + rng.below(40) as f64;
            let view = rng.below(4_000) as f64;
            let scrolled = rng.below(800_000) as f64 - 2_000.0;
            let g = Geometry {
                scrolled,
                view,
                row,
            };
            let w = RowWindow::of(count, g);
            assert_eq!(w.above + w.drawn.len() + w.below, count, "{g:?}");
            assert_eq!(w.above, w.drawn.start);
            let visible = visible_rows(count, g);
            assert!(
                w.drawn.start <= visible.start && visible.end <= w.drawn.end,
                "{g:?}: {visible:?} not within {:?}",
                w.drawn
            );
            // A window that does not move still covers what is in view.
            let later = Geometry {
                scrolled: scrolled + rng.below(3_000) as f64 - 1_500.0,
                ..g
            };
            if !w.should_move(count, later) {
                let seen = visible_rows(count, later);
                assert!(
                    w.drawn.start <= seen.start && seen.end <= w.drawn.end,
                    "{later:?}: {seen:?} not within {:?}",
                    w.drawn
                );
            }
        }
    }
}

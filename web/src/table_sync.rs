//! How the table body follows its rows, as a plan over revisions alone:
//! which row elements go, which are made, and which move. `ui/table.rs`
//! carries the plan out on the DOM; the plan itself is plain data, tested
//! here without a browser.
//!
//! A row's revision is new whenever its content changes (see
//! [`crate::store::Row`]), so an element is kept exactly as long as its
//! revision is shown. The elements that stay in place are the longest run
//! of old elements whose order the new list keeps (a longest increasing
//! subsequence, as keyed DOM diffs do); every other shown row is inserted or
//! moved once. A change to one row is then one removal and one insertion,
//! and a first load is one insertion per row.

use std::collections::{HashMap, HashSet};

/// Where one shown row's element goes: before the element of `before`, or
/// at the end of the body when `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The row's position in the new list.
    pub index: usize,
    pub before: Option<u64>,
}

/// The DOM work that turns a body showing `old` into one showing `new`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Revisions shown before and not now: their elements are removed.
    pub removed: Vec<u64>,
    /// Positions in the new list whose revision has no element yet.
    pub created: Vec<usize>,
    /// Insertions, in the order to make them (last row first, so that every
    /// `before` is already where it belongs).
    pub places: Vec<Place>,
}

impl Plan {
    /// The plan from the revisions shown (`old`, in body order) to `new`.
    /// Revisions are unique within each list.
    pub fn between(old: &[u64], new: &[u64]) -> Plan {
        let shown: HashSet<u64> = new.iter().copied().collect();
        let removed: Vec<u64> = old.iter().copied().filter(|r| !shown.contains(r)).collect();
        let old_position: HashMap<u64, usize> =
            old.iter().enumerate().map(|(i, r)| (*r, i)).collect();
        let created: Vec<usize> = new
            .iter()
            .enumerate()
            .filter(|(_, r)| !old_position.contains_key(r))
            .map(|(i, _)| i)
            .collect();
        // For each new position, the old position of an element kept.
        let kept: Vec<Option<usize>> = new.iter().map(|r| old_position.get(r).copied()).collect();
        let stays = longest_increasing(&kept);
        let mut places = Vec::new();
        let mut next: Option<u64> = None;
        for (index, revision) in new.iter().enumerate().rev() {
            if !stays.contains(&index) {
                places.push(Place {
                    index,
                    before: next,
                });
            }
            next = Some(*revision);
        }
        Plan {
            removed,
            created,
            places,
        }
    }
}

/// The positions of a longest strictly increasing subsequence of the
/// `Some` values (patience sorting, O(n log n)).
fn longest_increasing(values: &[Option<usize>]) -> HashSet<usize> {
    // tails[k]: the position whose value ends the best run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; values.len()];
    for (position, value) in values.iter().enumerate() {
        let Some(value) = *value else { continue };
        let at = tails.partition_point(|&t| values[t].is_some_and(|v| v < value));
        if at > 0 {
            previous[position] = Some(tails[at - 1]);
        }
        if at == tails.len() {
            tails.push(position);
        } else {
            tails[at] = position;
        }
    }
    let mut run = HashSet::new();
    let mut cursor = tails.last().copied();
    while let Some(position) = cursor {
        run.insert(position);
        cursor = previous[position];
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;

    /// Carries `plan` out on a list standing in for the body.
    fn apply(old: &[u64], new: &[u64], plan: &Plan) -> Vec<u64> {
        let mut body: Vec<u64> = old
            .iter()
            .copied()
            .filter(|r| !plan.removed.contains(r))
            .collect();
        for place in &plan.places {
            let revision = new[place.index];
            body.retain(|r| *r != revision);
            let at = match place.before {
                Some(b) => body
                    .iter()
                    .position(|r| *r == b)
                    .expect("before is in the body"),
                None => body.len(),
            };
            body.insert(at, revision);
        }
        body
    }

    #[test]
    fn a_first_load_inserts_every_row_once() {
        let plan = Plan::between(&[], &[1, 2, 3]);
        assert_eq!(plan.created, vec![0, 1, 2]);
        assert!(plan.removed.is_empty());
        assert_eq!(
            plan.places,
            vec![
                Place {
                    index: 2,
                    before: None
                },
                Place {
                    index: 1,
                    before: Some(3)
                },
                Place {
                    index: 0,
                    before: Some(2)
                },
            ]
        );
    }

    #[test]
    fn a_changed_row_is_one_removal_and_one_insertion_in_its_place() {
        let plan = Plan::between(&[1, 2, 3, 4], &[1, 2, 9, 4]);
        assert_eq!(plan.removed, vec![3]);
        assert_eq!(plan.created, vec![2]);
        assert_eq!(
            plan.places,
            vec![Place {
                index: 2,
                before: Some(4)
            }]
        );
        assert_eq!(apply(&[1, 2, 3, 4], &[1, 2, 9, 4], &plan), vec![1, 2, 9, 4]);
    }

    #[test]
    fn a_row_moved_from_top_to_bottom_is_one_move() {
        let plan = Plan::between(&[1, 2, 3, 4, 5], &[2, 3, 4, 5, 1]);
        assert!(plan.removed.is_empty() && plan.created.is_empty());
        assert_eq!(
            plan.places,
            vec![Place {
                index: 4,
                before: None
            }]
        );
        assert_eq!(
            apply(&[1, 2, 3, 4, 5], &[2, 3, 4, 5, 1], &plan),
            vec![2, 3, 4, 5, 1]
        );
    }

    #[test]
    fn the_same_rows_need_nothing() {
        assert_eq!(Plan::between(&[4, 5, 6], &[4, 5, 6]), Plan::default());
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(9), ..ProptestConfig::default() })]
        /// Any old and new list: the plan gives exactly the new order, makes
        /// only rows not shown before, and moves no more rows than must move.
        #[test]
        fn a_plan_turns_any_old_body_into_the_new_one(
            old in proptest::sample::subsequence((0u64..40).collect::<Vec<_>>(), 0..40).prop_shuffle(),
            new in proptest::sample::subsequence((0u64..40).collect::<Vec<_>>(), 0..40).prop_shuffle(),
        ) {
            let plan = Plan::between(&old, &new);
            prop_assert_eq!(apply(&old, &new, &plan), new.clone());
            for i in &plan.created {
                prop_assert!(!old.contains(&new[*i]));
            }
            for r in &plan.removed {
                prop_assert!(old.contains(r) && !new.contains(r));
            }
            // As few moves as can be: every kept row moves but a longest
            // run whose old order the new list keeps (an O(n²) count here).
            let old_order: Vec<usize> = new
                .iter()
                .filter_map(|r| old.iter().position(|o| o == r))
                .collect();
            let mut best = vec![1usize; old_order.len()];
            for i in 0..old_order.len() {
                for j in 0..i {
                    if old_order[j] < old_order[i] {
                        best[i] = best[i].max(best[j] + 1);
                    }
                }
            }
            let longest = best.iter().copied().max().unwrap_or(0);
            let moved = plan.places.len() - plan.created.len();
            prop_assert_eq!(moved, old_order.len() - longest);
        }
    }
}

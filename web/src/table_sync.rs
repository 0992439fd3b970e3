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
//!
//! [`Plan::refill`] then pairs a removed element with a created row that
//! shows the same object: that element is filled in again and moved if it
//! must, instead of being removed and replaced. A changed row keeps its
//! element (and the focus, if it has it), and the browser restyles a few
//! cells instead of a new subtree.

use classify_wasm::hash::{KeyedMap, KeyedSet};
use std::hash::Hash;

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
    /// Elements filled in again ([`Plan::refill`]): the revision an element
    /// shows now, and the position in the new list it shows from here on.
    /// Each of those positions also has its [`Place`].
    pub refilled: Vec<(u64, usize)>,
}

impl Plan {
    /// The plan from the revisions shown (`old`, in body order) to `new`.
    /// Revisions are unique within each list.
    pub fn between(old: &[u64], new: &[u64]) -> Plan {
        let shown: KeyedSet<u64> = new.iter().copied().collect();
        let removed: Vec<u64> = old.iter().copied().filter(|r| !shown.contains(r)).collect();
        let old_position: KeyedMap<u64, usize> =
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
            refilled: Vec::new(),
        }
    }

    /// Pairs each removed revision with the created position that shows the
    /// same object, if one does: `old_key` names the object of a revision
    /// shown, `new_key` that of a position in the new list. Paired ones
    /// leave `removed` and `created` for `refilled`.
    pub fn refill<K: Eq + Hash>(
        &mut self,
        old_key: impl Fn(u64) -> Option<K>,
        new_key: impl Fn(usize) -> Option<K>,
    ) {
        if self.removed.is_empty() || self.created.is_empty() {
            return;
        }
        let mut gone: KeyedMap<K, u64> = self
            .removed
            .iter()
            .filter_map(|r| old_key(*r).map(|k| (k, *r)))
            .collect();
        let mut created = Vec::with_capacity(self.created.len());
        for index in std::mem::take(&mut self.created) {
            match new_key(index).and_then(|k| gone.remove(&k)) {
                Some(revision) => self.refilled.push((revision, index)),
                None => created.push(index),
            }
        }
        self.created = created;
        let reused: KeyedSet<u64> = self.refilled.iter().map(|(r, _)| *r).collect();
        self.removed.retain(|r| !reused.contains(r));
    }
}

/// The positions of a longest strictly increasing subsequence of the
/// `Some` values (patience sorting, O(n log n)).
fn longest_increasing(values: &[Option<usize>]) -> KeyedSet<usize> {
    // tails[k]: the position whose value ends the best run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; values.len()];
    for (position, value) in values.iter().enumerate() {
        let Some(value) = *value else { continue };
        let at =
            tails.partition_point(|&t| values.get(t).copied().flatten().is_some_and(|v| v < value));
        if let (Some(slot), Some(&before)) = (
            previous.get_mut(position),
            at.checked_sub(1).and_then(|a| tails.get(a)),
        ) {
            *slot = Some(before);
        }
        match tails.get_mut(at) {
            Some(tail) => *tail = position,
            None => tails.push(position),
        }
    }
    let mut run = KeyedSet::default();
    let mut cursor = tails.last().copied();
    while let Some(position) = cursor {
        run.insert(position);
        cursor = previous.get(position).copied().flatten();
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

    /// Carries out a refilled `plan`: its refilled elements are renamed to
    /// their new revision where they are, then every place is made.
    fn apply_refilled(old: &[u64], new: &[u64], plan: &Plan) -> Vec<u64> {
        let renamed: Vec<u64> = old
            .iter()
            .map(|r| match plan.refilled.iter().find(|(o, _)| o == r) {
                Some((_, i)) => new[*i],
                None => *r,
            })
            .collect();
        let unrefilled = Plan {
            refilled: Vec::new(),
            ..plan.clone()
        };
        apply(&renamed, new, &unrefilled)
    }

    #[test]
    fn a_changed_row_keeps_its_element_when_refilled() {
        // Revisions 3 and 9 both show object "c"; 5 is gone for good.
        let old = [1, 2, 3, 4, 5];
        let new = [1, 2, 9, 4];
        let key = |r: u64| match r {
            3 | 9 => "c",
            5 => "e",
            _ => "other",
        };
        let mut plan = Plan::between(&old, &new);
        plan.refill(|r| Some(key(r)), |i| Some(key(new[i])));
        assert_eq!(plan.refilled, vec![(3, 2)]);
        assert_eq!(plan.removed, vec![5]);
        assert!(plan.created.is_empty());
        assert_eq!(apply_refilled(&old, &new, &plan), new.to_vec());
    }

    #[test]
    fn a_refilled_row_that_moves_is_moved() {
        // Object "a" changes (revision 1 becomes 7) and sorts last now.
        let old = [1, 2, 3];
        let new = [2, 3, 7];
        let key = |r: u64| if r == 1 || r == 7 { "a" } else { "b" };
        let mut plan = Plan::between(&old, &new);
        plan.refill(|r| Some(key(r)), |i| Some(key(new[i])));
        assert_eq!(plan.refilled, vec![(1, 2)]);
        assert!(plan.removed.is_empty() && plan.created.is_empty());
        assert_eq!(apply_refilled(&old, &new, &plan), new.to_vec());
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

        /// Any old and new list, with objects named at random (each at most
        /// once per list): a refilled plan still gives the new order, pairs
        /// only revisions of the same object, and accounts for every element
        /// removed and every row made.
        #[test]
        fn a_refilled_plan_turns_any_old_body_into_the_new_one(
            old in proptest::sample::subsequence((0u64..40).collect::<Vec<_>>(), 0..40).prop_shuffle(),
            new in proptest::sample::subsequence((0u64..40).collect::<Vec<_>>(), 0..40).prop_shuffle(),
            names in proptest::collection::vec(0u8..12, 40),
        ) {
            // One name per revision; a name used twice in a list keeps its
            // first revision only, as a store keeps one row per object.
            let name = |r: u64| names[r as usize];
            let unique = |list: &[u64]| -> Vec<u64> {
                let mut seen = KeyedSet::default();
                list.iter().copied().filter(|r| seen.insert(name(*r))).collect()
            };
            let (old, new) = (unique(&old), unique(&new));
            let plain = Plan::between(&old, &new);
            let mut plan = plain.clone();
            plan.refill(|r| Some(name(r)), |i| new.get(i).map(|r| name(*r)));
            prop_assert_eq!(apply_refilled(&old, &new, &plan), new.clone());
            for (r, i) in &plan.refilled {
                prop_assert_eq!(name(*r), name(new[*i]));
            }
            let mut removed: Vec<u64> = plan.removed.iter().copied().chain(plan.refilled.iter().map(|(r, _)| *r)).collect();
            let mut created: Vec<usize> = plan.created.iter().copied().chain(plan.refilled.iter().map(|(_, i)| *i)).collect();
            removed.sort_unstable();
            created.sort_unstable();
            let (mut plain_removed, mut plain_created) = (plain.removed.clone(), plain.created.clone());
            plain_removed.sort_unstable();
            plain_created.sort_unstable();
            prop_assert_eq!(removed, plain_removed);
            prop_assert_eq!(created, plain_created);
            prop_assert_eq!(&plan.places, &plain.places);
        }
    }
}

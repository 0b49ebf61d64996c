//! The memory store's index of its pages: a table indexed by page number, in three levels
//! allocated as pages are written (a 1 GiB span's middle table, a 1 MiB span's leaf), as a
//! processor's page tables are. A look-up is three array reads, of which the top two stay in
//! cache (a 256 MiB working set has one middle table and 256 leaves): where the B-tree it
//! replaced descended about five nodes, each a cache miss at random 4 KiB reads (its look-ups
//! were 17.5 % of the server's time; docs/live-device.md, "Speed").

use std::ops::Range;

/// Pages per leaf (a leaf of 16-byte slots is then 4 KiB).
const LEAF_BITS: u32 = 8;
/// Leaves per middle table (8 KiB of pointers).
const MID_BITS: u32 = 10;
const LEAF_LEN: u64 = 1 << LEAF_BITS;
const MID_LEN: u64 = 1 << MID_BITS;
/// Pages under one top-level entry.
const MID_SPAN: u64 = LEAF_LEN * MID_LEN;

/// The tables hold their entries inline: a look-up follows one pointer per level.
struct Leaf<T> {
    slots: [Option<T>; LEAF_LEN as usize],
    /// Slots that hold a value: an emptied leaf is freed.
    used: u32,
}

struct Mid<T> {
    leaves: [Option<Box<Leaf<T>>>; MID_LEN as usize],
    /// Leaves allocated: an emptied middle table is freed.
    used: u32,
}

impl<T> Leaf<T> {
    fn new() -> Box<Leaf<T>> {
        Box::new(Leaf {
            slots: std::array::from_fn(|_| None),
            used: 0,
        })
    }
}

impl<T> Mid<T> {
    fn new() -> Box<Mid<T>> {
        Box::new(Mid {
            leaves: std::array::from_fn(|_| None),
            used: 0,
        })
    }
}

/// Where page `page` lies: top-level entry, leaf in it, slot in the leaf.
fn split(page: u64) -> (usize, usize, usize) {
    (
        (page / MID_SPAN) as usize,
        ((page / LEAF_LEN) % MID_LEN) as usize,
        (page % LEAF_LEN) as usize,
    )
}

/// A sparse map from page numbers to `T`, in page order.
pub struct PageIndex<T> {
    top: Vec<Option<Box<Mid<T>>>>,
}

impl<T> Default for PageIndex<T> {
    fn default() -> PageIndex<T> {
        PageIndex { top: Vec::new() }
    }
}

impl<T> PageIndex<T> {
    pub fn get(&self, page: u64) -> Option<&T> {
        let (t, m, l) = split(page);
        let mid = self.top.get(t)?.as_deref()?;
        mid.leaves[m].as_deref()?.slots[l].as_ref()
    }

    /// The value at `page`, put there by `make` if there was none.
    pub fn get_or_insert_with(&mut self, page: u64, make: impl FnOnce() -> T) -> &mut T {
        let (t, m, l) = split(page);
        if self.top.len() <= t {
            self.top.resize_with(t + 1, || None);
        }
        let mid = self.top[t].get_or_insert_with(Mid::new);
        let leaf = match &mut mid.leaves[m] {
            Some(leaf) => leaf,
            empty => {
                mid.used += 1;
                empty.insert(Leaf::new())
            }
        };
        let slot = &mut leaf.slots[l];
        if slot.is_none() {
            leaf.used += 1;
        }
        slot.get_or_insert_with(make)
    }

    pub fn insert(&mut self, page: u64, value: T) {
        let mut value = Some(value);
        let slot = self.get_or_insert_with(page, || value.take().expect("taken once"));
        if let Some(v) = value {
            *slot = v;
        }
    }

    pub fn remove(&mut self, page: u64) {
        self.remove_range(page..page + 1);
    }

    /// The first page held in `from .. end`, and its value; absent leaves and middle tables
    /// are stepped over whole.
    fn first_in(&self, mut from: u64, end: u64) -> Option<(u64, &T)> {
        while from < end {
            let (t, m, l) = split(from);
            let Some(mid) = self.top.get(t)?.as_deref() else {
                from = (t as u64 + 1) * MID_SPAN;
                continue;
            };
            let Some(leaf) = mid.leaves[m].as_deref() else {
                from = (from / LEAF_LEN + 1) * LEAF_LEN;
                continue;
            };
            let stop = (end - from).min(LEAF_LEN - l as u64) as usize;
            if let Some((k, v)) = leaf.slots[l..l + stop]
                .iter()
                .enumerate()
                .find_map(|(k, s)| s.as_ref().map(|v| (k, v)))
            {
                return Some((from + k as u64, v));
            }
            from += stop as u64;
        }
        None
    }

    /// The pages held in `pages`, in order.
    pub fn range(&self, pages: Range<u64>) -> impl Iterator<Item = (u64, &T)> {
        let mut from = pages.start;
        std::iter::from_fn(move || {
            let (page, v) = self.first_in(from, pages.end)?;
            from = page + 1;
            Some((page, v))
        })
    }

    /// Drop every page in `pages`: whole leaves and middle tables at once.
    pub fn remove_range(&mut self, pages: Range<u64>) {
        let mut from = pages.start;
        while from < pages.end {
            let (t, m, l) = split(from);
            let Some(Some(mid)) = self.top.get_mut(t) else {
                if t >= self.top.len() {
                    return;
                }
                from = (t as u64 + 1) * MID_SPAN;
                continue;
            };
            let leaf_end = (from / LEAF_LEN + 1) * LEAF_LEN;
            if let Some(leaf) = mid.leaves[m].as_deref_mut() {
                let stop = (pages.end.min(leaf_end) - from) as usize;
                for slot in &mut leaf.slots[l..l + stop] {
                    if slot.take().is_some() {
                        leaf.used -= 1;
                    }
                }
                if leaf.used == 0 {
                    mid.leaves[m] = None;
                    mid.used -= 1;
                    if mid.used == 0 {
                        self.top[t] = None;
                    }
                }
            }
            from = leaf_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Pages spread over three middle tables' spans, so that the steps over absent leaves and
    /// tables are taken.
    fn page() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..2 * LEAF_LEN + 3,
            MID_SPAN - 5..MID_SPAN + 5,
            2 * MID_SPAN + 250..2 * MID_SPAN + 3 * LEAF_LEN,
        ]
    }

    proptest! {
        /// The index against a BTreeMap, the simple model it replaced: the same values at the
        /// same pages, the same ranges in the same order, after any inserts,
        /// removals and removals of ranges.
        #[test]
        fn the_index_holds_what_a_btree_map_holds(
            ops in proptest::collection::vec((0u8..5, page(), 0u64..3 * MID_SPAN, any::<u32>()), 1..200)
        ) {
            let mut index = PageIndex::default();
            let mut model = BTreeMap::new();
            for (op, page, len, v) in ops {
                match op {
                    0 => {
                        index.insert(page, v);
                        model.insert(page, v);
                    }
                    1 => {
                        *index.get_or_insert_with(page, || v) ^= 1;
                        *model.entry(page).or_insert(v) ^= 1;
                    }
                    2 => {
                        index.remove(page);
                        model.remove(&page);
                    }
                    3 => {
                        let end = page.saturating_add(len % (2 * MID_SPAN));
                        index.remove_range(page..end);
                        let gone: Vec<u64> = model.range(page..end).map(|(&p, _)| p).collect();
                        for p in gone {
                            model.remove(&p);
                        }
                    }
                    _ => {
                        let end = page.saturating_add(len);
                        let got: Vec<(u64, u32)> = index.range(page..end).map(|(p, &v)| (p, v)).collect();
                        let want: Vec<(u64, u32)> = model.range(page..end).map(|(&p, &v)| (p, v)).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(index.get(page), model.get(&page));
                prop_assert_eq!(index.range(0..u64::MAX).count(), model.len());
            }
            let all: Vec<(u64, u32)> = index.range(0..u64::MAX).map(|(p, &v)| (p, v)).collect();
            let want: Vec<(u64, u32)> = model.iter().map(|(&p, &v)| (p, v)).collect();
            prop_assert_eq!(all, want);
        }
    }

    /// Emptied leaves and middle tables are freed: what is held is what holds pages.
    #[test]
    fn emptied_tables_are_freed() {
        let mut index = PageIndex::default();
        for p in [3, LEAF_LEN + 1, MID_SPAN + 7] {
            index.insert(p, p);
        }
        index.remove(3);
        let mid = index.top[0].as_deref().expect("a leaf left in it");
        assert!(mid.leaves[0].is_none());
        assert_eq!(mid.used, 1);
        index.remove_range(LEAF_LEN..MID_SPAN);
        assert!(index.top[0].is_none());
        index.remove_range(MID_SPAN + 7..MID_SPAN + 8);
        assert!(index.top.iter().all(Option::is_none));
        assert_eq!(index.range(0..u64::MAX).count(), 0);
    }
}

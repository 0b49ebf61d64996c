//! What of the page FTL's map controller memory holds: a type parameter of [`Ftl`], so that
//! each page-mapped scheme's paths are compiled for its own map and no field says which one a
//! drive has. All of it ([`FullMap`], of no size: the `page` scheme), or the translation pages
//! a mapping cache holds ([`MappingCache`], demand-paged: the `cached` scheme,
//! `ftl.mapping = "cached"`).
//!
//! The FTL keeps the whole map either way, as the truth of where data is. With a mapping cache,
//! the translation pages are logical units of the FTL after the host's (their map entries are
//! the global translation directory), and each change of a host unit's entry in timed mode — a
//! host write, a trim, a GC move — is told to the cache ([`Translation::entry_changed`]), whose
//! translation page then needs a program. Preconditioning (instant mode) tells it nothing: it
//! lays the map out and writes the translation pages once at its end.
//!
//! What does not depend on the map borrows the FTL as [`AnyFtl`] (`Ftl<dyn Translation>`): the
//! run's figures, saved states, the data oracle.

use super::mapping_cache::MappingCache;
use super::Ftl;

/// How the page FTL's map is held in controller memory (see the module's text).
pub trait Translation: 'static {
    /// The translation pages that hold the map of the host's units (0: the map is whole in
    /// memory).
    fn pages(&self) -> u64;
    /// The host units whose entries translation page `page` holds.
    fn entries_of(&self, page: u32) -> std::ops::Range<u64>;
    /// The translation page that holds host unit `lpn`'s entry (None: the map is whole in
    /// memory).
    fn page_of(&self, lpn: u64) -> Option<u32>;
    /// Warm the cache for a coming lookup of translation page `page` (speed only).
    fn prefetch_page(&self, page: u32);
    /// In timed mode, the map entry of unit `lpn` changed (a host write, a trim, a GC move):
    /// with a mapping cache its translation page is updated (units past the host's, map pages
    /// themselves, are no entry of any page).
    fn entry_changed(&mut self, lpn: u64);
    /// The mapping cache, for a cache buffer's flush, which looks up the translation page of
    /// the entry it is about to change (None: the map is whole in memory).
    fn cache_mut(&mut self) -> Option<&mut MappingCache>;
}

/// The whole map in controller memory (the `page` scheme): nothing to load, nothing to update.
#[derive(Clone, Copy, Debug, Default)]
pub struct FullMap;

impl Translation for FullMap {
    #[inline(always)]
    fn pages(&self) -> u64 {
        0
    }

    #[inline(always)]
    fn entries_of(&self, _page: u32) -> std::ops::Range<u64> {
        0..0
    }

    #[inline(always)]
    fn page_of(&self, _lpn: u64) -> Option<u32> {
        None
    }

    #[inline(always)]
    fn prefetch_page(&self, _page: u32) {}

    #[inline(always)]
    fn entry_changed(&mut self, _lpn: u64) {}

    #[inline(always)]
    fn cache_mut(&mut self) -> Option<&mut MappingCache> {
        None
    }
}

/// The demand-paged map (DFTL): the translation pages in use, in a cache.
impl Translation for MappingCache {
    #[inline]
    fn pages(&self) -> u64 {
        self.pages
    }

    #[inline]
    fn entries_of(&self, page: u32) -> std::ops::Range<u64> {
        let first = page as u64 * self.per_page;
        first..(first + self.per_page).min(self.base)
    }

    #[inline]
    fn page_of(&self, lpn: u64) -> Option<u32> {
        Some(MappingCache::page_of(self, lpn))
    }

    #[inline]
    fn prefetch_page(&self, page: u32) {
        self.prefetch(page);
    }

    #[inline]
    fn entry_changed(&mut self, lpn: u64) {
        self.update_lpn(lpn);
    }

    #[inline]
    fn cache_mut(&mut self) -> Option<&mut MappingCache> {
        Some(self)
    }
}

/// The page FTL with a demand-paged map (the `cached` scheme).
pub type CachedFtl = Ftl<MappingCache>;

/// The page FTL whichever its map: what reads its records, counters and tables, which do not
/// depend on it.
pub type AnyFtl = Ftl<dyn Translation>;

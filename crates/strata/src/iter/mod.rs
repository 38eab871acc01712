//! The cursor every sorted source implements (memtable, block, table, level,
//! merge), over internal keys. Movement returns errors (a corrupt block) instead
//! of hiding them in a status field.

use crate::error::Result;

/// A bidirectional cursor over internal keys in [`crate::key::compare_internal`] order.
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Positions at the last entry.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Positions at the first entry `>= target` (an internal key).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Positions at the last entry `<= target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()>;
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self) -> Result<()>;
    /// The current internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Requires `valid()`.
    fn value(&self) -> &[u8];
}

/// Boxed iterators are iterators too.
impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    fn prev(&mut self) -> Result<()> {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
}

mod covered;
mod merge;
mod run;
mod upper;

pub(crate) use covered::{Piece, Pieces, SeekPastCovered};

pub use merge::MergingIterator;
pub(crate) use run::PrefixSkip;
pub use run::RunIterator;
pub(crate) use upper::UpperBound;

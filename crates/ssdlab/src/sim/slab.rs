//! A slab of values named by `u32`, reusing freed slots (last freed, first reused), so steady
//! state allocates nothing per request. In-flight requests, commands and flash transactions live
//! in slabs; cross-references between them are these indices.

pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = Some(v);
            i
        } else {
            self.items.push(Some(v));
            (self.items.len() - 1) as u32
        }
    }

    #[inline]
    pub fn remove(&mut self, i: u32) -> T {
        let v = self.items[i as usize].take().expect("slab slot in use");
        self.free.push(i);
        v
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        self.items[i as usize].as_ref().expect("slab slot in use")
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("slab slot in use")
    }

    /// The values in use, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }

    /// Values in use.
    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::Slab;

    #[test]
    fn freed_slots_are_reused_last_freed_first() {
        let mut s = Slab::default();
        let a = s.insert('a');
        let b = s.insert('b');
        let c = s.insert('c');
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(s.remove(a), 'a');
        assert_eq!(s.remove(c), 'c');
        assert_eq!(s.len(), 1);
        assert_eq!(s.insert('d'), 2);
        assert_eq!(s.insert('e'), 0);
        assert_eq!(*s.get(1), 'b');
        *s.get_mut(1) = 'B';
        assert_eq!(s.remove(1), 'B');
        assert_eq!(s.len(), 2);
    }

    #[test]
    #[should_panic(expected = "slab slot in use")]
    fn a_freed_slot_cannot_be_read() {
        let mut s = Slab::default();
        let a = s.insert(1u8);
        s.remove(a);
        s.get(a);
    }
}

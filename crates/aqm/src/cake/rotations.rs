//! The three flow rotations of a tin (new, old, decaying) as intrusive
//! doubly linked lists over flow indices, as the kernel's list_head: a
//! flow sits in at most one of them and moves between them in O(1), even
//! from the middle (a decaying flow that gets a packet).

const NIL: u16 = u16::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    New,
    Old,
    Decaying,
}

impl List {
    fn slot(self) -> usize {
        self as usize
    }
}

pub struct Rotations {
    /// (head, tail) of each list.
    ends: [(u16, u16); 3],
    /// (prev, next) of each flow.
    links: Vec<(u16, u16)>,
    member: Vec<Option<List>>,
}

impl Rotations {
    pub fn new(flows: usize) -> Rotations {
        Rotations {
            ends: [(NIL, NIL); 3],
            links: vec![(NIL, NIL); flows],
            member: vec![None; flows],
        }
    }

    pub fn front(&self, list: List) -> Option<usize> {
        let head = self.ends[list.slot()].0;
        (head != NIL).then_some(head as usize)
    }

    pub fn is_empty(&self, list: List) -> bool {
        self.ends[list.slot()].0 == NIL
    }

    #[cfg(test)]
    pub fn list_of(&self, flow: usize) -> Option<List> {
        self.member[flow]
    }

    /// Takes a flow out of whichever list holds it.
    pub fn remove(&mut self, flow: usize) {
        let Some(list) = self.member[flow].take() else {
            return;
        };
        let (prev, next) = self.links[flow];
        let ends = &mut self.ends[list.slot()];
        if prev == NIL {
            ends.0 = next;
        } else {
            self.links[prev as usize].1 = next;
        }
        if next == NIL {
            ends.1 = prev;
        } else {
            self.links[next as usize].0 = prev;
        }
        self.links[flow] = (NIL, NIL);
    }

    /// Appends a flow to `list`, taking it out of any other first.
    pub fn move_to_back(&mut self, flow: usize, list: List) {
        self.remove(flow);
        let ends = &mut self.ends[list.slot()];
        let tail = ends.1;
        self.links[flow] = (tail, NIL);
        if tail == NIL {
            ends.0 = flow as u16;
        } else {
            self.links[tail as usize].1 = flow as u16;
        }
        ends.1 = flow as u16;
        self.member[flow] = Some(list);
    }

    #[cfg(test)]
    pub fn collect(&self, list: List) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = self.ends[list.slot()].0;
        while at != NIL {
            out.push(at as usize);
            at = self.links[at as usize].1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_move_between_lists_from_anywhere() {
        let mut r = Rotations::new(8);
        for f in [1, 2, 3] {
            r.move_to_back(f, List::Decaying);
        }
        r.move_to_back(5, List::New);
        r.move_to_back(2, List::New); // from the middle of decaying
        assert_eq!(r.collect(List::Decaying), vec![1, 3]);
        assert_eq!(r.collect(List::New), vec![5, 2]);
        r.move_to_back(5, List::Old);
        r.remove(3);
        r.remove(1);
        assert!(r.is_empty(List::Decaying));
        assert_eq!((r.front(List::New), r.front(List::Old)), (Some(2), Some(5)));
        assert_eq!((r.list_of(2), r.list_of(1)), (Some(List::New), None));
    }
}

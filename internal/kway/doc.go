// Package kway is a small binary min-heap for k-way merges: several sources,
// each already in order, read as one stream in order. The heap holds one
// entry per source (its current head); the merge loop reads Top, advances
// that source and calls FixTop, or Pop when the source is exhausted.
//
// In one paragraph: New(less, k) makes a Heap of T ordered by less with room
// for k entries; Push adds, Top reads the smallest, Pop removes it, FixTop
// restores the order after the top entry's key grew (the merge step: one
// sift-down, no pop and push), Init replaces the contents and heapifies,
// Reset empties. Once the heap has the capacity it needs nothing allocates,
// and T is not boxed (container/heap moves entries through any).
//
// It is not for: priority queues that change keys in the middle (there is
// no Fix(i) or Remove(i)), nor stable order: entries with equal keys come
// out in no particular order, so a merge that must be deterministic breaks
// ties in less (by source index, then by position within the source).
//
// # Caveats
//
//   - A Heap is not safe for concurrent use.
//   - less must be a strict weak order and must not change while entries are
//     in the heap, except for the top entry between its change and FixTop.
//   - The heap keeps the entries (pointers included) it holds; Pop and Reset
//     clear the slots they free so that nothing removed stays reachable.
//   - Top and Pop on an empty heap panic with a BUG: message: the caller's
//     loop checks Len first.
package kway

package stripetest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type keyedInt struct{ k sortKey }

func (v *keyedInt) sortKey() sortKey { return v.k }

func TestIndexKeepsOrderWhateverTheArrivalOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n         int
		readEvery int // sort after every readEvery adds; 0 = only at the end
		created   func(r *rand.Rand, i int) int64
	}{
		{"in-order adds stay sorted without merging", 500, 7, func(_ *rand.Rand, i int) int64 { return int64(i / 3) }},
		{"a random bulk load is sorted once", 2000, 0, func(r *rand.Rand, _ int) int64 { return r.Int64N(100) }},
		{"random adds between reads are merged", 2000, 13, func(r *rand.Rand, _ int) int64 { return r.Int64N(100) }},
		{"single late adds between reads are merged", 500, 1, func(r *rand.Rand, i int) int64 { return int64(i) - r.Int64N(50) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var x index[*keyedInt]
			var want []sortKey
			check := func() {
				x.sort()
				slices.SortFunc(want, compareKeys)
				got := make([]sortKey, len(x.items))
				for i, e := range x.items {
					got[i] = e.key
					if e.v.k != e.key {
						t.Fatalf("entry %d holds key %v for object %v", i, e.key, e.v.k)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("after %d adds the index is out of order", len(want))
				}
				for i, k := range want {
					if p := x.search(k); p != i {
						t.Fatalf("search(%v) = %d, want %d", k, p, i)
					}
				}
			}
			for i := range tc.n {
				k := sortKey{tc.created(r, i), uint64(i + 1)}
				x.add(&keyedInt{k})
				want = append(want, k)
				if tc.readEvery > 0 && i%tc.readEvery == 0 {
					check()
				}
			}
			check()
		})
	}
}

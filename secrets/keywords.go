package secrets

// keywords finds which of a set of lower-case ASCII words occur in a text,
// ignoring ASCII case, in one pass: an Aho-Corasick automaton compiled to a
// full transition table over the bytes the words use (every other byte is
// one class), so each byte of text costs one table load. This is the
// prefilter that keeps clean text cheap.
type keywords struct {
	class  [256]uint8
	nclass int
	delta  []int32   // state*nclass + class → next state*nclass, complemented (<0) when words end there
	out    [][]int32 // state*nclass → words that end there
	lens   []int     // word → length
}

func newKeywords(words []string) *keywords {
	k := &keywords{nclass: 1}
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			c := w[i]
			if k.class[c] == 0 {
				if k.nclass == 256 {
					panic("secrets: keywords use more than 255 distinct bytes")
				}
				k.class[c] = uint8(k.nclass)
				if 'a' <= c && c <= 'z' {
					k.class[c-'a'+'A'] = uint8(k.nclass)
				}
				k.nclass++
			}
		}
	}
	k.build(words)
	return k
}

// build makes the trie, then fills every missing transition from the
// state's failure link, breadth first, so a walk never follows a link.
func (k *keywords) build(words []string) {
	goTo := [][]int32{make([]int32, k.nclass)}
	k.out = [][]int32{nil}
	for wi, w := range words {
		k.lens = append(k.lens, len(w))
		s := int32(0)
		for i := 0; i < len(w); i++ {
			c := k.class[w[i]]
			if goTo[s][c] == 0 {
				goTo = append(goTo, make([]int32, k.nclass))
				k.out = append(k.out, nil)
				goTo[s][c] = int32(len(goTo) - 1)
			}
			s = goTo[s][c]
		}
		k.out[s] = append(k.out[s], int32(wi))
	}
	fail := make([]int32, len(goTo))
	queue := []int32{}
	for c := 0; c < k.nclass; c++ {
		if t := goTo[0][c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		k.out[s] = append(k.out[s], k.out[fail[s]]...)
		for c := 0; c < k.nclass; c++ {
			if t := goTo[s][c]; t != 0 {
				fail[t] = goTo[fail[s]][c]
				queue = append(queue, t)
			} else {
				goTo[s][c] = goTo[fail[s]][c]
			}
		}
	}
	n := int32(k.nclass)
	k.delta = make([]int32, 0, len(goTo)*k.nclass)
	for _, row := range goTo {
		for _, t := range row {
			v := t * n
			if len(k.out[t]) > 0 {
				v = ^v
			}
			k.delta = append(k.delta, v)
		}
	}
	byOffset := make([][]int32, len(goTo)*k.nclass)
	for s, o := range k.out {
		byOffset[int32(s)*n] = o
	}
	k.out = byOffset
}

// walk calls fn with the start and end offsets of every word in s.
func (k *keywords) walk(s string, fn func(word, start, end int)) {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		st = k.delta[st+int32(k.class[s[i]])]
		if st < 0 {
			st = ^st
			for _, w := range k.out[st] {
				fn(int(w), i+1-k.lens[w], i+1)
			}
		}
	}
}

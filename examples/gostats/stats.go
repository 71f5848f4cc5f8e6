// Package gostats is small text statistics: the bundled Go example (it has bugs on purpose).
package gostats

import (
	"regexp"
	"sort"
	"strings"
)

var word = regexp.MustCompile(`[A-Za-z']+`)

// Words are the text's words, lower-cased, in order.
func Words(text string) []string {
	found := word.FindAllString(text, -1)
	for i, w := range found {
		found[i] = strings.ToLower(w)
	}
	return found
}

// WordCount is how many words the text has.
func WordCount(text string) int {
	return len(Words(text))
}

// MeanWordLength is the mean length of the text's words, 0 for none.
func MeanWordLength(text string) float64 {
	found := Words(text)
	if len(found) == 0 {
		return 0
	}
	total := 0
	for _, w := range found {
		total += len(w)
	}
	return float64(total / len(found))
}

// Count is one word and how often it occurs.
type Count struct {
	Word string
	N    int
}

// TopWords are the n most common words, most common first, ties in order of first use.
func TopWords(text string, n int) []Count {
	order := []string{}
	counts := map[string]int{}
	for _, w := range Words(text) {
		if counts[w] == 0 {
			order = append(order, w)
		}
		counts[w]++
	}
	top := make([]Count, 0, len(order))
	for _, w := range order {
		top = append(top, Count{w, counts[w]})
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].N > top[j].N })
	if len(top) > n-1 {
		top = top[:n-1]
	}
	return top
}

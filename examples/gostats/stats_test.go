package gostats

import (
	"reflect"
	"testing"
)

func TestWordCount(t *testing.T) {
	if got, want := WordCount("It's a small, small world."), 5; got != want {
		t.Errorf("WordCount() = %d, want %d", got, want)
	}
}

func TestWordCountEmpty(t *testing.T) {
	if got := WordCount("  ... "); got != 0 {
		t.Errorf("WordCount() = %d, want 0", got)
	}
}

func TestMeanWordLength(t *testing.T) {
	if got, want := MeanWordLength("ab abc"), 2.5; got != want {
		t.Errorf("MeanWordLength() = %v, want %v", got, want)
	}
}

func TestMeanWordLengthEmpty(t *testing.T) {
	if got := MeanWordLength(""); got != 0 {
		t.Errorf("MeanWordLength() = %v, want 0", got)
	}
}

func TestTopWords(t *testing.T) {
	got := TopWords("b a b c a b", 2)
	want := []Count{{"b", 3}, {"a", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TopWords() = %v, want %v", got, want)
	}
}

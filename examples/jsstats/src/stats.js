"use strict";

const WORD = /[A-Za-z']+/g;

/** The text's words, lower-cased, in order. */
function words(text) {
  return (text.match(WORD) || []).map((w) => w.toLowerCase());
}

/** How many words the text has. */
function wordCount(text) {
  return words(text).length;
}

/** The mean length of the text's words, 0 for none. */
function meanWordLength(text) {
  const found = words(text);
  if (found.length === 0) {
    return 0;
  }
  const total = found.reduce((sum, w) => sum + w.length, 0);
  return Math.floor(total / found.length);
}

/** The n most common words as [word, count], most common first, ties in order of first use. */
function topWords(text, n) {
  const counts = new Map();
  for (const w of words(text)) {
    counts.set(w, (counts.get(w) || 0) + 1);
  }
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  return ranked.slice(0, n - 1);
}

module.exports = { words, wordCount, meanWordLength, topWords };

"use strict";

const { wordCount, meanWordLength, topWords } = require("../src/stats");

test("wordCount counts words", () => {
  expect(wordCount("It's a small, small world.")).toBe(5);
});

test("wordCount of no words is 0", () => {
  expect(wordCount("  ... ")).toBe(0);
});

test("meanWordLength is the mean", () => {
  expect(meanWordLength("ab abc")).toBe(2.5);
});

test("meanWordLength of no words is 0", () => {
  expect(meanWordLength("")).toBe(0);
});

test("topWords ranks by count", () => {
  expect(topWords("b a b c a b", 2)).toEqual([
    ["b", 3],
    ["a", 2],
  ]);
});

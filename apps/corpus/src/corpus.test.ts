import { describe, expect, it } from "vitest";
import {
  Corpus,
  DEFAULT_VOCABULARY_SIZE,
  DEFAULT_ZIPF_EXPONENT,
  generateVocabulary,
  Mulberry32,
  referenceCounts,
  sampleRank,
  sharesOf,
  tokenize,
  zipfCdf,
} from "./corpus.js";

function lines(corpus: Corpus, subtask: number, count: number): string[] {
  const partition = corpus.partition(
    { seed: corpus.seed, records: 1_000_000, parallelism: 2 },
    subtask,
  );
  return Array.from({ length: count }, () => partition.nextLine() as string);
}

function words(line: string): string[] {
  const out: string[] = [];
  tokenize(line, out);
  return out;
}

describe("corpus", () => {
  it("generates the same lines for the same seed and subtask, in every process", () => {
    const a = new Corpus(42);
    const b = new Corpus(42);
    expect(lines(a, 0, 200)).toEqual(lines(b, 0, 200));
    // Pinned text: a change here means processes built from different versions would disagree.
    expect(lines(new Corpus(42), 0, 2)).toMatchInlineSnapshot(`
      [
        "Te so fo vy te, cu, pi te tacloundgri te so wu so hu.",
        "Ror ji flendfai ji so zit bo to lo so cu.",
      ]
    `);
  });

  it("skips lines exactly as generating them would (a restored source seeks to its offset)", () => {
    const corpus = new Corpus(42);
    const spec = { seed: 42, records: 2_000, parallelism: 2 };
    const all: string[] = [];
    const full = corpus.partition(spec, 1);
    for (let line = full.nextLine(); line !== undefined; line = full.nextLine()) all.push(line);
    for (const skip of [0, 1, 37, all.length - 1]) {
      const seeking = corpus.partition(spec, 1);
      seeking.skipLines(skip);
      expect(seeking.nextLine()).toBe(all[skip]);
    }
    const past = corpus.partition(spec, 1);
    past.skipLines(all.length + 5);
    expect(past.nextLine()).toBeUndefined();
    expect(past.remainingWords).toBe(0);
  });

  it("gives different subtasks and different seeds different text", () => {
    const corpus = new Corpus(42);
    expect(lines(corpus, 0, 50)).not.toEqual(lines(corpus, 1, 50));
    expect(lines(new Corpus(7), 0, 50)).not.toEqual(lines(corpus, 0, 50));
  });

  it("builds a vocabulary of distinct lower-case words, shortest first", () => {
    const vocabulary = generateVocabulary(42);
    expect(vocabulary).toHaveLength(DEFAULT_VOCABULARY_SIZE);
    expect(new Set(vocabulary).size).toBe(vocabulary.length);
    for (const word of vocabulary) expect(word).toMatch(/^[a-z]+$/);
    for (let i = 1; i < vocabulary.length; i++) {
      expect((vocabulary[i] as string).length).toBeGreaterThanOrEqual(
        (vocabulary[i - 1] as string).length,
      );
    }
  });

  it("samples ranks with Zipf-like frequencies (f(k) ~ 1/k^s)", () => {
    const size = DEFAULT_VOCABULARY_SIZE;
    const cdf = zipfCdf(size);
    const random = new Mulberry32(1);
    const samples = 400_000;
    const freq = new Float64Array(size);
    for (let i = 0; i < samples; i++) {
      const rank = sampleRank(cdf, random.next());
      freq[rank] = (freq[rank] as number) + 1;
    }
    let harmonic = 0;
    for (let k = 1; k <= size; k++) harmonic += 1 / k ** DEFAULT_ZIPF_EXPONENT;
    // The most frequent word has probability 1/H(n, s).
    expect((freq[0] as number) / samples).toBeCloseTo(1 / harmonic, 2);
    // Least squares on log f(k) = c - s log k over the first 100 ranks recovers the exponent.
    let sx = 0;
    let sy = 0;
    let sxx = 0;
    let sxy = 0;
    const n = 100;
    for (let k = 1; k <= n; k++) {
      const x = Math.log(k);
      const y = Math.log(freq[k - 1] as number);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    expect(-slope).toBeGreaterThan(DEFAULT_ZIPF_EXPONENT - 0.1);
    expect(-slope).toBeLessThan(DEFAULT_ZIPF_EXPONENT + 0.1);
  });

  it("finds the rank by binary search on the cumulative distribution, at the edges too", () => {
    const cdf = Float64Array.from([0.5, 0.75, 1]);
    expect(sampleRank(cdf, 0)).toBe(0);
    expect(sampleRank(cdf, 0.4999)).toBe(0);
    expect(sampleRank(cdf, 0.5)).toBe(1);
    expect(sampleRank(cdf, 0.9999)).toBe(2);
  });

  it("splits the words over the subtasks exactly", () => {
    expect(sharesOf(10, 3)).toEqual([4, 3, 3]);
    expect(sharesOf(2, 4)).toEqual([1, 1, 0, 0]);
    const spec = { seed: 3, records: 12_345, parallelism: 3 };
    const corpus = new Corpus(spec.seed);
    let total = 0;
    for (let s = 0; s < 3; s++) {
      const partition = corpus.partition(spec, s);
      for (let line = partition.nextLine(); line !== undefined; line = partition.nextLine())
        total += words(line).length;
    }
    expect(total).toBe(12_345);
  });

  it("tokenizes rendered lines back into exactly the sampled words", () => {
    const corpus = new Corpus(11);
    const spec = { seed: 11, records: 5_000, parallelism: 1 };
    const rendered = corpus.partition(spec, 0);
    const sampled = corpus.partition(spec, 0);
    const ranks: number[] = [];
    for (let line = rendered.nextLine(); line !== undefined; line = rendered.nextLine()) {
      const n = sampled.nextLineRanks(ranks);
      expect(words(line)).toEqual(ranks.slice(0, n).map((r) => corpus.vocabulary[r]));
    }
    expect(sampled.nextLineRanks(ranks)).toBe(0);
  });

  it("splits on anything but ASCII letters and lower-cases", () => {
    expect(words("Hello, wORLD... it's  fine!")).toEqual(["hello", "world", "it", "s", "fine"]);
    expect(words("")).toEqual([]);
    expect(words(" ,. ")).toEqual([]);
  });

  it("computes reference counts that add up to the number of words", () => {
    const spec = { seed: 42, records: 20_000, parallelism: 2 };
    const counts = referenceCounts(spec);
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(20_000);
    const vocabulary = new Corpus(42).vocabulary;
    // The most frequent word is rank 0.
    const top = [...counts].sort((a, b) => b[1] - a[1])[0];
    expect(top?.[0]).toBe(vocabulary[0]);
  });
});

/**
 * The demo's input: a deterministic, seeded text corpus with Zipf-like word frequencies.
 *
 * Every process (job manager and task managers) rebuilds the same vocabulary and the same
 * sampling table from the seed, so a source subtask can generate its share of the corpus
 * locally and the job manager can recompute the expected counts in-process, without any data
 * being shipped around except through the shuffle under test.
 */

/**
 * A seeded PRNG returning floats in [0, 1): mulberry32 (32-bit state, fast, good enough here).
 * A class rather than a closure per stream: the many sources of one process then call `next`
 * on objects of one shape, one call target for the JIT to inline, where a closure per stream
 * is a different target for each source and turns the per-word call sites polymorphic.
 */
export class Mulberry32 {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The next float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/** Derives an independent stream seed from a base seed and a stream number (splitmix-style). */
export function deriveSeed(seed: number, stream: number): number {
  let z = (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(stream + 1, 0x85ebca6b)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x7feb352d);
  z = Math.imul(z ^ (z >>> 15), 0x846ca68b);
  return (z ^ (z >>> 16)) >>> 0;
}

/** What identifies a corpus: every process that knows this builds the same words. */
export interface CorpusSpec {
  /** Base seed of the vocabulary, the frequencies and every subtask's stream. */
  readonly seed: number;
  /** Total number of words, split over the source subtasks. */
  readonly records: number;
  /** Number of source subtasks. */
  readonly parallelism: number;
}

/** Default number of distinct words. */
export const DEFAULT_VOCABULARY_SIZE = 4096;
/** Default Zipf exponent: the k-th most frequent word has weight 1 / k^s. */
export const DEFAULT_ZIPF_EXPONENT = 1.07;

const ONSETS = [
  "b",
  "c",
  "d",
  "f",
  "g",
  "h",
  "j",
  "k",
  "l",
  "m",
  "n",
  "p",
  "r",
  "s",
  "t",
  "v",
  "w",
  "z",
  "br",
  "ch",
  "cl",
  "dr",
  "fl",
  "gr",
  "pl",
  "pr",
  "sh",
  "st",
  "th",
  "tr",
];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y"];
const CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"];

function pick<T>(items: readonly T[], random: Mulberry32): T {
  return items[Math.floor(random.next() * items.length)] as T;
}

/**
 * Builds `size` distinct pronounceable words from `seed`, shortest first, so that (as in natural
 * language) the most frequent ranks get the shortest words.
 */
export function generateVocabulary(seed: number, size = DEFAULT_VOCABULARY_SIZE): string[] {
  const random = new Mulberry32(deriveSeed(seed, 0x5eed));
  const words = new Set<string>();
  let attempts = 0;
  while (words.size < size) {
    if (++attempts > size * 100) throw new Error(`cannot generate ${size} distinct words`);
    const syllables = 1 + Math.floor(random.next() * random.next() * 4);
    let word = "";
    for (let s = 0; s < syllables; s++)
      word += pick(ONSETS, random) + pick(VOWELS, random) + pick(CODAS, random);
    words.add(word);
  }
  // Stable sort: equal lengths keep their (seeded) generation order.
  return [...words].sort((a, b) => a.length - b.length);
}

/** Cumulative distribution of Zipf weights 1/k^s over `size` ranks; the last entry is exactly 1. */
export function zipfCdf(size: number, exponent = DEFAULT_ZIPF_EXPONENT): Float64Array {
  const cdf = new Float64Array(size);
  let total = 0;
  for (let k = 0; k < size; k++) {
    total += 1 / (k + 1) ** exponent;
    cdf[k] = total;
  }
  for (let k = 0; k < size; k++) cdf[k] = (cdf[k] as number) / total;
  cdf[size - 1] = 1;
  return cdf;
}

/** The smallest rank whose cumulative probability exceeds `u` (u in [0, 1)): a binary search. */
export function sampleRank(cdf: Float64Array, u: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((cdf[mid] as number) > u) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** How many words each of `parallelism` source subtasks produces (the first ones get the rest). */
export function sharesOf(records: number, parallelism: number): number[] {
  const base = Math.floor(records / parallelism);
  const rest = records % parallelism;
  return Array.from({ length: parallelism }, (_, i) => base + (i < rest ? 1 : 0));
}

/** The vocabulary and the sampling table of one seed; build once per process and share. */
export class Corpus {
  readonly vocabulary: readonly string[];
  readonly cdf: Float64Array;

  constructor(
    readonly seed: number,
    vocabularySize = DEFAULT_VOCABULARY_SIZE,
    exponent = DEFAULT_ZIPF_EXPONENT,
  ) {
    this.vocabulary = generateVocabulary(seed, vocabularySize);
    this.cdf = zipfCdf(vocabularySize, exponent);
  }

  /** The generator of source subtask `subtask`'s share of `spec`. */
  partition(spec: CorpusSpec, subtask: number): CorpusPartition {
    const words = sharesOf(spec.records, spec.parallelism)[subtask];
    if (words === undefined)
      throw new RangeError(`no subtask ${subtask} of parallelism ${spec.parallelism}`);
    return new CorpusPartition(this, deriveSeed(spec.seed, subtask + 1), words);
  }
}

const MIN_LINE_WORDS = 3;
const MAX_LINE_WORDS = 14;
const LINE_ENDS = [".", ".", ".", "!", "?", "..."];

/**
 * Generates one subtask's lines. Two PRNG streams: one picks the words (the only thing the
 * reference counts depend on), the other only styles the text (capitals, commas, line ends), so
 * the reference can skip rendering while the sources must really tokenize.
 */
export class CorpusPartition {
  private readonly words: Mulberry32;
  private readonly style: Mulberry32;
  private readonly ids: number[] = [];
  private remaining: number;

  constructor(
    private readonly corpus: Corpus,
    seed: number,
    readonly totalWords: number,
  ) {
    this.words = new Mulberry32(seed);
    this.style = new Mulberry32(deriveSeed(seed, 0x57e1e));
    this.remaining = totalWords;
  }

  /** Words not generated yet. */
  get remainingWords(): number {
    return this.remaining;
  }

  /**
   * Fills `out` with the vocabulary ranks of the next line's words; returns how many (0 at the
   * end). The last line is cut so the partition has exactly `totalWords` words.
   */
  nextLineRanks(out: number[]): number {
    if (this.remaining === 0) return 0;
    const wanted =
      MIN_LINE_WORDS + Math.floor(this.words.next() * (MAX_LINE_WORDS - MIN_LINE_WORDS + 1));
    const n = Math.min(wanted, this.remaining);
    const cdf = this.corpus.cdf;
    const words = this.words;
    for (let i = 0; i < n; i++) out[i] = sampleRank(cdf, words.next());
    this.remaining -= n;
    return n;
  }

  /**
   * Skips the next `lines` lines exactly as {@link nextLine} would have generated them (both
   * streams advance alike), without building their text: a restored source seeks to its offset.
   * Stops at the end of the partition.
   */
  skipLines(lines: number): void {
    for (let line = 0; line < lines; line++) {
      const n = this.nextLineRanks(this.ids);
      if (n === 0) return;
      // nextLine draws one style value per word gap and one for the line's end.
      for (let i = 0; i < n; i++) this.style.next();
    }
  }

  /** The next line as text (capitalised, with punctuation), or `undefined` at the end. */
  nextLine(): string | undefined {
    const ids = this.ids;
    const n = this.nextLineRanks(ids);
    if (n === 0) return undefined;
    const vocabulary = this.corpus.vocabulary;
    const style = this.style;
    const first = vocabulary[ids[0] as number] as string;
    let line = first.charAt(0).toUpperCase() + first.slice(1);
    for (let i = 1; i < n; i++) {
      line += style.next() < 0.08 ? ", " : " ";
      line += vocabulary[ids[i] as number] as string;
    }
    return line + pick(LINE_ENDS, style);
  }
}

/**
 * Splits a line into lower-case words: maximal runs of ASCII letters; everything else separates.
 * Appends them to `words`, which callers reuse from line to line (no array per line); an array
 * rather than a callback, so that the sources of one process do not each bring a callback of
 * their own to this per-word call site.
 */
export function tokenize(line: string, words: string[]): void {
  let start = -1;
  let upper = false;
  const length = line.length;
  for (let i = 0; i <= length; i++) {
    const c = i < length ? line.charCodeAt(i) : 0;
    const isLower = c >= 97 && c <= 122;
    const isUpper = c >= 65 && c <= 90;
    if (isLower || isUpper) {
      if (start < 0) {
        start = i;
        upper = false;
      }
      if (isUpper) upper = true;
    } else if (start >= 0) {
      const word = line.slice(start, i);
      words.push(upper ? word.toLowerCase() : word);
      start = -1;
    }
  }
}

/**
 * The expected word counts of the whole corpus, computed directly from the sampled ranks (no
 * text, no tokenizer, no shuffle): what the job must reproduce.
 */
export function referenceCounts(
  spec: CorpusSpec,
  corpus = new Corpus(spec.seed),
): Map<string, number> {
  const byRank = new Float64Array(corpus.vocabulary.length);
  const ids: number[] = [];
  for (let subtask = 0; subtask < spec.parallelism; subtask++) {
    const partition = corpus.partition(spec, subtask);
    for (let n = partition.nextLineRanks(ids); n > 0; n = partition.nextLineRanks(ids)) {
      for (let i = 0; i < n; i++)
        byRank[ids[i] as number] = (byRank[ids[i] as number] as number) + 1;
    }
  }
  const counts = new Map<string, number>();
  byRank.forEach((count, rank) => {
    if (count > 0) counts.set(corpus.vocabulary[rank] as string, count);
  });
  return counts;
}

// Percentiles from Prometheus-style histograms, the way Grafana's
// histogram_quantile does it over rate(): the bucket counts of the window
// (the difference between two cumulative snapshots), linear interpolation
// inside the bucket that holds the rank.

export interface Hist { bounds: number[]; counts: number[]; sum: number; count: number }

// b - a, bucket by bucket (b is the later snapshot).
export function histDelta(a: Hist | undefined, b: Hist): Hist {
  if (!a || a.counts.length !== b.counts.length) return b;
  return { bounds: b.bounds, counts: b.counts.map((c, i) => c - a.counts[i]), sum: b.sum - a.sum,
           count: b.count - a.count };
}

// The q-quantile (0..1) of `h`, or null without observations. Ranks in the
// +Inf bucket answer its lower bound (the largest finite bound).
export function quantile(h: Hist, q: number): number | null {
  if (h.count <= 0) return null;
  const rank = q * h.count;
  let cumulative = 0;
  for (let i = 0; i < h.counts.length; ++i) {
    const before = cumulative;
    cumulative += h.counts[i];
    if (cumulative >= rank && h.counts[i] > 0) {
      if (i >= h.bounds.length) return h.bounds[h.bounds.length - 1] ?? null;
      const lo = i === 0 ? 0 : h.bounds[i - 1];
      const hi = h.bounds[i];
      return lo + (hi - lo) * ((rank - before) / h.counts[i]);
    }
  }
  return h.bounds[h.bounds.length - 1] ?? null;
}

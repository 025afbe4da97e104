// The dashboard's last polls of GET /console/api/stats, kept whole, so that
// the series of any scope (all replicas, one model, one replica) can be
// derived from them at any time: switching the filters loses no points and
// every replica has its own history. Derived per call: 300 polls times a few
// replicas is a few thousand small objects a second.
import { derive, Derived, Sample, sampleOf, Scope, StatsAnswer } from './stats';

export class PollHistory {
  private polls: Array<{ t: number; a: StatsAnswer }> = [];

  constructor(private keep: number, private window: number) {}

  push(a: StatsAnswer) {
    this.polls.push({ t: a.time_ms || Date.now(), a });
    if (this.polls.length > this.keep) this.polls.shift();
  }

  get latest(): StatsAnswer | null { return this.polls.length ? this.polls[this.polls.length - 1].a : null; }

  // The polls' times in seconds (uPlot's time scale).
  times(): number[] { return this.polls.map(p => p.t / 1000); }

  // Each poll seen through `scope`, and what the charts plot of it.
  series(scope: Scope): { samples: Sample[]; derived: Derived[] } {
    const samples = this.polls.map(p => sampleOf(p.a, p.t, scope));
    return { samples, derived: samples.map((_, i) => derive(samples, i, this.window)) };
  }
}

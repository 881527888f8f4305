// autocannon ships no types; the benchmarks use a small part of its API.
declare module "autocannon" {
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    non2xx: number;
    errors: number;
    timeouts: number;
  }
  function autocannon(opts: Record<string, unknown>): Promise<Result>;
  export default autocannon;
}

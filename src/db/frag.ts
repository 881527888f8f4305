/** A piece of SQL (the condition compiler and the engine dialects build these) with its parameters: parts.length === params.length + 1 (a parameter between each part). */
export class Frag {
  constructor(
    readonly parts: readonly string[],
    readonly params: readonly unknown[],
  ) {}
  get sql(): string {
    return this.parts.join("?");
  }
}

/** Tagged template: interpolated Frags are spliced in, anything else becomes a bound parameter. */
export function q(strings: TemplateStringsArray, ...vals: unknown[]): Frag {
  const parts: string[] = [strings[0]!];
  const params: unknown[] = [];
  vals.forEach((v, i) => {
    if (v instanceof Frag) {
      parts[parts.length - 1] += v.parts[0]!;
      for (let k = 0; k < v.params.length; k++) {
        params.push(v.params[k]);
        parts.push(v.parts[k + 1]!);
      }
    } else {
      params.push(v);
      parts.push("");
    }
    parts[parts.length - 1] += strings[i + 1]!;
  });
  return new Frag(parts, params);
}

/** Literal SQL text (never user input unless escaped by the caller). */
export const raw = (text: string) => new Frag([text], []);

export function join(frags: readonly Frag[], sep: string): Frag {
  if (!frags.length) return raw("");
  let out = frags[0]!;
  for (let i = 1; i < frags.length; i++) out = q`${out}${raw(sep)}${frags[i]}`;
  return out;
}

export const TRUE = raw("1 = 1");
export const FALSE = raw("1 = 0");

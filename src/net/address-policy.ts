import ipaddr from "ipaddr.js";

/**
 * Which IP addresses an outbound webhook may reach. Only ordinary public unicast addresses pass:
 * loopback, RFC 1918, CGNAT (100.64/10), ULA (fc00::/7), link-local, unspecified, multicast,
 * broadcast and the reserved/documentation ranges are refused, also when hidden inside an IPv6
 * form that embeds an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96,
 * SIIT ::ffff:0:a.b.c.d, 6to4 2002::/16). Range names come from ipaddr.js.
 */
export interface AddressVerdict {
  allowed: boolean;
  /** ipaddr.js range name ("unicast", "loopback", "private", …), prefixed "embedded " when found inside IPv6. */
  range: string;
  address: string;
}

function embeddedV4(v6: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = v6.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const range = v6.range();
  if (range === "ipv4Mapped" || range === "rfc6145" || range === "rfc6052") return v4(p[6]!, p[7]!);
  if (range === "6to4") return v4(p[1]!, p[2]!);
  // IPv4-compatible (deprecated ::a.b.c.d): the first 96 bits are zero; :: and ::1 are classified as themselves.
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7]! > 1)) return v4(p[6]!, p[7]!);
  return null;
}

/** Classifies an IP literal (v4 or v6, with or without brackets or a zone id). Not an IP: refused. */
export function classifyAddress(raw: string): AddressVerdict {
  const address = raw.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!ipaddr.isValid(address)) return { allowed: false, range: "invalid", address };
  const ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6") {
    const inner = embeddedV4(ip as ipaddr.IPv6);
    if (inner) {
      const r = inner.range();
      return { allowed: r === "unicast", range: `embedded ${r}`, address };
    }
  }
  const range = ip.range();
  return { allowed: range === "unicast", range, address };
}

export const isIpLiteral = (host: string) => ipaddr.isValid(host.replace(/^\[|\]$/g, "").replace(/%.*$/, ""));

/**
 * `localhost` and every name under it (`a.localhost`), in any case, with or without the root's
 * trailing dot: loopback by definition (RFC 6761 §6.3), refused without asking a resolver (which may
 * not know the name, or answer anything).
 */
export function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, "");
  return h === "localhost" || h.endsWith(".localhost");
}

/**
 * Why a URL's host may not be reached by a webhook, told from the host alone (no lookup): a
 * localhost name or an IP literal outside public unicast. Null when only resolving it can tell.
 */
export function refusedHost(host: string): string | null {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.+$/, "");
  if (isLoopbackName(h)) return "loopback name";
  if (isIpLiteral(h)) {
    const v = classifyAddress(h);
    if (!v.allowed) return v.range;
  }
  return null;
}

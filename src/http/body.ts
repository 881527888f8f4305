/** Raw text of JSON request bodies, for routes that verify a signature over the exact bytes (webhooks). */
export const rawBodies = new WeakMap<Request, string>();

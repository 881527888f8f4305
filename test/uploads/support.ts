// The smallest valid image of each accepted type (1x1 pixel).
const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));
export const IMAGES = {
  png: { bytes: b64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="), type: "image/png", ext: "png" },
  gif: { bytes: b64("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"), type: "image/gif", ext: "gif" },
  jpeg: {
    bytes: b64("/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA="),
    type: "image/jpeg",
    ext: "jpg",
  },
  webp: { bytes: b64("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="), type: "image/webp", ext: "webp" },
};


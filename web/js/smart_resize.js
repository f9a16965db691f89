// The image-size rule of the Qwen2-VL/Qwen3-VL image processor, so the page can tell people what an
// image will cost before they send it. Source: transformers
// src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py `smart_resize` (the server's
// src/image implements the same rule; both are checked against tests/fixtures/golden/manifest.json).

// Python's round(): ties go to the even neighbour (464 / 32 = 14.5 -> 14, 336 / 32 = 10.5 -> 10).
export function roundHalfEven(x) {
  const r = Math.floor(x);
  const diff = x - r;
  if (diff > 0.5) return r + 1;
  if (diff < 0.5) return r;
  return r % 2 === 0 ? r : r + 1;
}

// Returns {width, height} of the resized image, or throws an Error saying why the image is refused.
// factor = patch_size * merge_size (32 for Qwen3-VL).
export function smartResize(width, height, { factor, minPixels, maxPixels }) {
  if (!(width > 0 && height > 0)) throw new Error(`image has no pixels (${width}x${height})`);
  if (Math.max(width, height) / Math.min(width, height) > 200) {
    throw new Error(`aspect ratio ${width}x${height} is over 200:1`);
  }
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return { width: w, height: h };
}

// What one image costs: the resized size, the vision grid and the number of tokens it adds to the
// prompt (one token per merge_size x merge_size patches), from the server's /v1/qvl/config.
// requestedMinPixels (the request's min_pixels, e.g. raised for grounding) is clamped as the server
// does: into [config.min_pixels, the effective max_pixels].
export function imageCost(width, height, config, requestedMaxPixels, requestedMinPixels = 0) {
  const factor = config.patch_size * config.merge_size;
  const maxPixels = effectiveMaxPixels(config, requestedMaxPixels);
  const minPixels = requestedMinPixels > 0
    ? Math.min(Math.max(requestedMinPixels, config.min_pixels), maxPixels) : Math.min(config.min_pixels, maxPixels);
  const resized = smartResize(width, height, { factor, minPixels, maxPixels });
  const gridW = resized.width / config.patch_size;
  const gridH = resized.height / config.patch_size;
  const tokens = (gridW * gridH) / (config.merge_size * config.merge_size);
  return { width: resized.width, height: resized.height, gridW, gridH, tokens };
}

// A request's max_pixels is clamped to the server's cap (and never below min_pixels), as the server does.
export function effectiveMaxPixels(config, requestedMaxPixels) {
  let max = config.max_pixels;
  if (requestedMaxPixels > 0) max = Math.min(max, requestedMaxPixels);
  return Math.max(max, config.min_pixels);
}

// The min_pixels/max_pixels a request sends to give each image at least `minTokens` image tokens
// (grounding needs >= 1024: the model places boxes poorly on small images). min_pixels is
// minTokens x (patch_size x merge_size)^2, capped by the server's max_pixels; max_pixels is raised to
// it when the page's own max-pixels setting is lower.
export function raisedPixels(config, requestedMaxPixels, minTokens) {
  const factor = config.patch_size * config.merge_size;
  const min = Math.min(minTokens * factor * factor, config.max_pixels);
  const max = Math.max(effectiveMaxPixels(config, requestedMaxPixels), min);
  return { min_pixels: min, max_pixels: max };
}

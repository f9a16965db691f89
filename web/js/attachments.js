// Turns dropped, pasted or picked files into attachments: checks type and size against the server's
// limits before reading anything, reads the bytes as a data: URI (the form the API takes), and
// measures the image so the page can show its token cost.
import { formatBytes } from './errors.js';

const IMAGE_EXT = /\.(png|jpe?g|webp|gif|bmp)$/i;
const MIME_BY_EXT = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp',
  gif: 'image/gif', bmp: 'image/bmp' };

let nextId = 1;

// Returns an error sentence, or null when the file may be attached.
export function checkFile(file, config) {
  const name = file.name || 'pasted image';
  const isImage = (file.type && file.type.startsWith('image/')) || IMAGE_EXT.test(name);
  if (!isImage) return `“${name}” is not an image (PNG, JPEG, WebP, GIF or BMP).`;
  if (file.size === 0) return `“${name}” is empty.`;
  if (file.size > config.max_image_bytes) {
    return `“${name}” is ${formatBytes(file.size)}; the server accepts images up to ` +
      `${formatBytes(config.max_image_bytes)}. Resize or compress it first.`;
  }
  return null;
}

function mimeOf(file) {
  if (file.type && file.type.startsWith('image/')) return file.type;
  const ext = (file.name || '').split('.').pop().toLowerCase();
  return MIME_BY_EXT[ext] || 'image/png';
}

export function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error || new Error('read failed'));
    r.readAsDataURL(file);
  });
}

// Resolves to {width, height}, or null when this browser cannot decode the file. Such a file is still
// sent: the server decides, and its error message says precisely what is wrong with it.
function measure(url) {
  return new Promise((resolve) => {
    const img = new Image();
    img.onload = () => resolve(img.naturalWidth > 0 ? { width: img.naturalWidth, height: img.naturalHeight } : null);
    img.onerror = () => resolve(null);
    img.src = url;
  });
}

export async function readAttachment(file) {
  let dataUrl = await readAsDataUrl(file);
  // FileReader labels unknown types application/octet-stream; the API wants data:image/...
  const mime = mimeOf(file);
  dataUrl = dataUrl.replace(/^data:[^;,]*/, `data:${mime}`);
  const size = await measure(dataUrl);
  return {
    id: nextId++,
    name: file.name || 'pasted image',
    bytes: file.size,
    mime,
    dataUrl,
    width: size ? size.width : 0,
    height: size ? size.height : 0,
    decodable: size !== null,
  };
}

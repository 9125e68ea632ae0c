/**
 * What the engine's PDFs share (domain/invoice-pdf.ts, domain/receipt-pdf.ts): an A4 pdfkit
 * document in DejaVu Sans (embedded, so Latin, Greek and Cyrillic names print as written), its
 * bytes when it ends, and the header: the brand's colour bar, the title with its badges, and the
 * seller's name as a letterhead under its logo.
 */

export const ink = '#1a1a1a';
export const muted = '#6b6b6b';
export const rule = '#d9d9d9';
export const pageMargin = 50;

/** The font files' bytes, read by the caller (services/invoices/pdf.ts pdfFonts): no file is read here. */
export interface PdfFonts {
  regular: Buffer;
  bold: Buffer;
}

/**
 * An A4 document with `fonts` registered as 'Regular' and 'Bold', and its bytes once `doc.end()` is called.
 * pdfkit is imported on the first PDF, not at start: the API process holds it only once it renders one.
 */
export async function startPdf(
  info: PDFKit.DocumentInfo,
  fonts: PdfFonts,
  options: { bufferPages?: boolean } = {},
): Promise<{ doc: PDFKit.PDFDocument; finished: Promise<Buffer> }> {
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: pageMargin, bottom: pageMargin, left: pageMargin, right: pageMargin },
    ...(options.bufferPages ? { bufferPages: true } : {}),
    info,
  });
  doc.registerFont('Regular', fonts.regular);
  doc.registerFont('Bold', fonts.bold);
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  return { doc, finished };
}

export interface PdfHeader {
  title: string;
  /** Coloured labels after the title, in order (a status, TEST MODE). */
  badges: { label: string; color: string }[];
  sellerName: string;
  brand?: { color: string; logo?: Buffer | null } | null;
}

/** Draws the header at the top of the page; the caller continues below `doc.y`. */
export function drawPdfHeader(doc: PDFKit.PDFDocument, header: PdfHeader): void {
  const left = pageMargin;
  const width = doc.page.width - 2 * pageMargin;
  if (header.brand) doc.rect(0, 0, doc.page.width, 8).fill(header.brand.color);
  doc.font('Bold').fontSize(24).fillColor(ink).text(header.title, left, pageMargin, { lineBreak: false });
  let x = left + doc.widthOfString(header.title) + 12;
  doc.font('Bold').fontSize(8);
  for (const { label, color } of header.badges) {
    const w = doc.widthOfString(label) + 14;
    doc.roundedRect(x, pageMargin + 8, w, 16, 3).fill(color);
    doc.fillColor('#ffffff').text(label, x, pageMargin + 12.5, { width: w, align: 'center', lineBreak: false });
    x += w + 6;
  }
  // The seller's name as a letterhead (under its logo, in its colour).
  let letterheadY = pageMargin + 8;
  if (header.brand?.logo) {
    try {
      doc.image(header.brand.logo, left + width / 2, pageMargin - 10, { fit: [width / 2, 34], align: 'right' });
      letterheadY = pageMargin + 30;
    } catch {
      // A logo pdfkit cannot read (it was checked on upload) leaves the name alone.
    }
  }
  doc
    .font('Bold')
    .fontSize(13)
    .fillColor(header.brand?.color ?? ink)
    .text(header.sellerName, left + width / 2, letterheadY, { width: width / 2, align: 'right' });
}

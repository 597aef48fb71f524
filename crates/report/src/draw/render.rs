//! Figures for papers: the report's own SVG charts, rasterized to PNG
//! (resvg) or converted to vector PDF (svg2pdf). There is one drawing path,
//! `plot.rs`; this module only changes the container, so a PNG or PDF shows
//! exactly what the SVG and the HTML page show.

use resvg::{tiny_skia, usvg};
use std::io;
use std::sync::Arc;

/// A file format a figure can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FigureFormat {
    Svg,
    Png,
    Pdf,
}

impl FigureFormat {
    pub fn extension(self) -> &'static str {
        match self {
            FigureFormat::Svg => "svg",
            FigureFormat::Png => "png",
            FigureFormat::Pdf => "pdf",
        }
    }
}

/// PNGs are drawn at twice the SVG's size: sharp in a paper or on a
/// high-density screen (a 720-pixel-wide chart becomes 1440 pixels).
const PNG_SCALE: f32 = 2.0;

/// Sans-serif families in order of preference, as Linux, macOS and
/// Windows systems name them.
const SANS_SERIF: [&str; 6] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
    "FreeSans",
];

/// Turns SVG text into PNG or PDF bytes. Holds the system's fonts, loaded
/// once, for the charts' labels.
pub struct Renderer {
    options: usvg::Options<'static>,
}

impl Default for Renderer {
    fn default() -> Self {
        Renderer::new()
    }
}

impl Renderer {
    pub fn new() -> Renderer {
        let mut fonts = usvg::fontdb::Database::new();
        fonts.load_system_fonts();
        // The charts ask for `sans-serif`, which fontdb maps to Arial:
        // point it at a sans-serif face this system has, else any face,
        // so the labels are drawn rather than silently left out.
        let families: Vec<String> = fonts
            .faces()
            .flat_map(|face| face.families.iter().map(|(name, _)| name.clone()))
            .collect();
        let sans = SANS_SERIF
            .iter()
            .find(|wanted| families.iter().any(|f| f == *wanted))
            .map(|f| f.to_string())
            .or_else(|| families.first().cloned());
        if let Some(family) = sans {
            fonts.set_sans_serif_family(family);
        }
        let options = usvg::Options {
            fontdb: Arc::new(fonts),
            ..usvg::Options::default()
        };
        Renderer { options }
    }

    fn tree(&self, svg: &str) -> io::Result<usvg::Tree> {
        usvg::Tree::from_str(svg, &self.options).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("reading the SVG: {e}"))
        })
    }

    /// The figure in `format` (SVG is returned as it is).
    pub fn render(&self, svg: &str, format: FigureFormat) -> io::Result<Vec<u8>> {
        match format {
            FigureFormat::Svg => Ok(svg.as_bytes().to_vec()),
            FigureFormat::Png => self.png(svg),
            FigureFormat::Pdf => self.pdf(svg),
        }
    }

    pub fn png(&self, svg: &str) -> io::Result<Vec<u8>> {
        let tree = self.tree(svg)?;
        let size = tree
            .size()
            .to_int_size()
            .scale_by(PNG_SCALE)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "the SVG has no size"))?;
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or_else(|| io::Error::other("cannot allocate the image"))?;
        resvg::render(
            &tree,
            tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE),
            &mut pixmap.as_mut(),
        );
        pixmap
            .encode_png()
            .map_err(|e| io::Error::other(format!("encoding the PNG: {e}")))
    }

    pub fn pdf(&self, svg: &str) -> io::Result<Vec<u8>> {
        let tree = self.tree(svg)?;
        svg2pdf::to_pdf(
            &tree,
            svg2pdf::ConversionOptions::default(),
            svg2pdf::PageOptions::default(),
        )
        .map_err(|e| io::Error::other(format!("converting to PDF: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draw::plot::{Chart, Series};

    fn chart_svg() -> String {
        let mut chart = Chart::new("throughput", "time (s)", "Mbit/s");
        chart.series.push(Series::line(
            "flow 1",
            crate::draw::plot::color(0),
            (0..50).map(|i| (i as f64 * 0.1, (i % 7) as f64)).collect(),
        ));
        chart.svg()
    }

    #[test]
    fn a_chart_becomes_a_png_with_drawing_on_it() {
        let png = Renderer::new().png(&chart_svg()).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 2_000, "{} bytes", png.len());
    }

    /// The labels are drawn: a chart's PDF embeds a font and its PNG has
    /// dark pixels in the title's row, above the plot.
    #[test]
    fn labels_are_drawn() {
        let renderer = Renderer::new();
        let svg = chart_svg();
        let pdf = renderer.pdf(&svg).unwrap();
        assert!(
            pdf.windows(5).any(|w| w == b"/Font"),
            "no font in the PDF: is a font installed (fonts-dejavu-core)?"
        );
        let png = renderer.png(&svg).unwrap();
        let image = tiny_skia::Pixmap::decode_png(&png).unwrap();
        let width = image.width() as usize;
        // The title is centred at y = 20 (40 in the doubled image).
        let title_rows = &image.pixels()[30 * width..44 * width];
        let dark = title_rows.iter().filter(|p| p.red() < 128).count();
        assert!(dark > 50, "{dark} dark pixels where the title is");
    }

    #[test]
    fn a_chart_becomes_a_pdf() {
        let pdf = Renderer::new().pdf(&chart_svg()).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
        assert!(pdf.len() > 1_000, "{} bytes", pdf.len());
        let tail = String::from_utf8_lossy(&pdf[pdf.len() - 32..]).into_owned();
        assert!(tail.contains("%%EOF"), "{tail}");
    }

    #[test]
    fn broken_svg_is_an_error_not_a_panic() {
        assert!(Renderer::new().png("<svg").is_err());
        assert!(Renderer::new().pdf("not svg").is_err());
    }
}

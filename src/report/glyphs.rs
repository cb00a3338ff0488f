//! Text on the pictures. One face, DejaVu Sans 2.37 (Debian's fonts-dejavu-core; its
//! licence is `assets/fonts/LICENSE`), is built into the binary: a picture is the same
//! bytes on every machine, and a machine without fonts draws it too.
//!
//! Two halves. plotters lays text out (how wide a label is, where the legend's box ends)
//! with ab_glyph, once [`register`] has given it the face under the family name the
//! figures ask for. The PNG's pixels come from [`CrispText`], a wrapper around the bitmap
//! backend that passes every drawing call through except text, which it draws itself:
//! each glyph's outline at its exact pen position, left bearing included, kerned, inside
//! the box plotters laid out for it. Neither of plotters' own rasterisers does that:
//! its `ab_glyph` one starts every glyph's ink at a whole-pixel pen and drops the bearing
//! (titles read "defaul t"), and its `ttf` one (font-kit) clipped any glyph that starts
//! left of its origin, so `j` lost its stem. SVGs keep their `<text>`: the viewer draws
//! them, with the same layout.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::prelude::{DrawingBackend, FontStyle};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// The face's bytes.
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// The family name every figure asks for.
pub const FAMILY: &str = "sans-serif";

/// The face, parsed once.
fn face() -> Option<&'static FontRef<'static>> {
    static FACE: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FACE.get_or_init(|| FontRef::try_from_slice(FONT).ok())
        .as_ref()
}

/// Give plotters the face under [`FAMILY`] (once per process), so that its layout of
/// text is the face's.
pub fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    ok.then_some(())
        .ok_or_else(|| "the built-in font does not parse".to_string())
}

/// Where the baseline sits in plotters' text box, as a fraction of its height from the
/// top (the box is `size / 1.24` high; plotters' font-kit renderer used the same
/// baseline, so pictures keep their text where it was).
const BASELINE: f32 = 0.76;

/// Each pixel the glyphs of `text` cover, at `size` (the scale plotters' layout uses),
/// in a box `box_height` high whose top-left corner is (0, 0): `put(x, y, coverage)`.
fn rasterize(size: f64, box_height: i32, text: &str, mut put: impl FnMut(i32, i32, f32)) {
    let Some(face) = face() else { return };
    let font = face.as_scaled(PxScale::from(size as f32));
    let baseline = BASELINE * box_height as f32;
    let mut pen = 0.0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(prev) = prev {
            pen += font.kern(prev, id);
        }
        let glyph = id.with_scale_and_position(font.scale(), point(pen, baseline));
        if let Some(outline) = font.outline_glyph(glyph) {
            let at = outline.px_bounds().min;
            let (x0, y0) = (at.x as i32, at.y as i32);
            outline.draw(|x, y, coverage| {
                put(x0 + x as i32, y0 + y as i32, coverage.min(1.0));
            });
        }
        pen += font.h_advance(id);
        prev = Some(id);
    }
}

/// A backend whose text is drawn by `rasterize`; everything else goes to the backend
/// it wraps.
pub struct CrispText<DB>(pub DB);

impl<DB: DrawingBackend> DrawingBackend for CrispText<DB> {
    type ErrorType = DB::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    /// plotters' own `DrawingBackend::draw_text` (the box, its anchor, the rotation),
    /// with `rasterize`'s pixels.
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let turn = style.transform();
        let (w, h) = self.0.get_size();
        let mut drawn = Ok(());
        rasterize(style.size(), height, text, |x, y, coverage| {
            let (x, y) = turn.transform(x + dx, y + dy);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if drawn.is_ok() && x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                let ink = BackendColor {
                    alpha: color.alpha * f64::from(coverage),
                    rgb: color.rgb,
                };
                drawn = self.0.draw_pixel((x, y), ink);
            }
        });
        drawn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How much ink `text` leaves, and its leftmost inked column.
    fn ink(text: &str) -> (f32, i32) {
        let (mut sum, mut left) = (0.0, i32::MAX);
        rasterize(22.0, (22.0 / 1.24) as i32, text, |x, _, c| {
            sum += c;
            if c > 0.5 {
                left = left.min(x);
            }
        });
        (sum, left)
    }

    /// DejaVu Sans' `j` starts left of its origin; font-kit's path clipped it to its dot.
    #[test]
    fn a_glyph_left_of_its_origin_keeps_its_ink() {
        let (i, _) = ink("i");
        let (j, _) = ink("j");
        assert!(j > 1.2 * i, "j {j} vs i {i}: the descender is there");
    }

    /// Each glyph's ink starts at its left side bearing from the pen, as the face
    /// says (plotters' own rasteriser started it at the pen).
    #[test]
    fn glyphs_start_at_their_side_bearings() {
        let font = face().unwrap().as_scaled(PxScale::from(22.0));
        for c in ['l', 't', 'o', 'j'] {
            let bearing = font.h_side_bearing(font.glyph_id(c));
            let (_, left) = ink(&c.to_string());
            assert!(
                (left as f32 - bearing).abs() <= 1.0,
                "{c}: ink from column {left}, side bearing {bearing}"
            );
        }
    }
}

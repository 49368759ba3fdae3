#pragma once
/// A tiny SVG writer: escaped text and attributes, elements appended in document order,
/// groups, and the document wrapper. No library: the output is plain SVG 1.1 that browsers,
/// rsvg-convert and XML parsers read.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trident::cli {

/// Attributes in the order written: {"class", "gpu"}, {"data-stage", "3"}.
using SvgAttrs = std::vector<std::pair<std::string, std::string>>;

/// `text` with & < > " ' replaced by their XML entities.
[[nodiscard]] std::string xml_escape(std::string_view text);

/// A coordinate or length with at most two decimals and no trailing zeros ("12.5", "3").
[[nodiscard]] std::string svg_num(double value);

/// Builds the body of one SVG document; `document` wraps it with the <svg> element.
class SvgWriter {
 public:
  void rect(double x, double y, double width, double height, const SvgAttrs& attrs = {});
  void line(double x1, double y1, double x2, double y2, const SvgAttrs& attrs = {});
  /// Text at (x, y) (baseline), escaped.
  void text(double x, double y, std::string_view content, const SvgAttrs& attrs = {});
  void path(const std::string& d, const SvgAttrs& attrs = {});
  /// <title> of the enclosing element: the tooltip browsers show.
  void title(std::string_view content);
  void open_group(const SvgAttrs& attrs = {});
  void close_group();
  /// The document: <svg width height viewBox> with `style` (CSS) and the body. Throws
  /// std::logic_error when a group is still open.
  [[nodiscard]] std::string document(double width, double height, std::string_view style) const;
  [[nodiscard]] const std::string& body() const { return body_; }

 private:
  void element(std::string_view name, const std::string& geometry, const SvgAttrs& attrs);
  std::string body_;
  int open_groups_ = 0;
};

}  // namespace trident::cli

// The SVG writer (cli/svg.h).
#include "cli/svg.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace trident::cli {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string svg_num(double value) {
  if (!std::isfinite(value)) return "0";
  std::string out = fmt::format("{:.2f}", value);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out == "-0" ? "0" : out;
}

namespace {

std::string attrs_text(const SvgAttrs& attrs) {
  std::string out;
  for (const auto& [name, value] : attrs) out += " " + name + "=\"" + xml_escape(value) + "\"";
  return out;
}

}  // namespace

void SvgWriter::element(std::string_view name, const std::string& geometry, const SvgAttrs& attrs) {
  body_ += "<";
  body_ += name;
  body_ += geometry + attrs_text(attrs) + "/>\n";
}

void SvgWriter::rect(double x, double y, double width, double height, const SvgAttrs& attrs) {
  element("rect",
          fmt::format(" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", svg_num(x), svg_num(y),
                      svg_num(std::max(0.0, width)), svg_num(std::max(0.0, height))),
          attrs);
}

void SvgWriter::line(double x1, double y1, double x2, double y2, const SvgAttrs& attrs) {
  element("line",
          fmt::format(" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"", svg_num(x1), svg_num(y1),
                      svg_num(x2), svg_num(y2)),
          attrs);
}

void SvgWriter::text(double x, double y, std::string_view content, const SvgAttrs& attrs) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\"{}>{}</text>\n", svg_num(x), svg_num(y),
                       attrs_text(attrs), xml_escape(content));
}

void SvgWriter::path(const std::string& d, const SvgAttrs& attrs) {
  element("path", " d=\"" + xml_escape(d) + "\"", attrs);
}

void SvgWriter::title(std::string_view content) {
  body_ += "<title>" + xml_escape(content) + "</title>\n";
}

void SvgWriter::open_group(const SvgAttrs& attrs) {
  body_ += "<g" + attrs_text(attrs) + ">\n";
  ++open_groups_;
}

void SvgWriter::close_group() {
  if (open_groups_ == 0) throw std::logic_error("SvgWriter: close_group without open_group");
  body_ += "</g>\n";
  --open_groups_;
}

std::string SvgWriter::document(double width, double height, std::string_view style) const {
  if (open_groups_ != 0) throw std::logic_error("SvgWriter: a group is still open");
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      svg_num(width), svg_num(height));
  if (!style.empty()) out += "<style>" + xml_escape(style) + "</style>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + svg_num(width) + "\" height=\"" + svg_num(height) +
         "\" fill=\"#ffffff\"/>\n";
  return out + body_ + "</svg>\n";
}

}  // namespace trident::cli

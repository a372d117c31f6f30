// LSP framing mutations (mutator.h): wrong, duplicate and huge Content-Length values, missing or
// bare line ends, odd headers, garbage between frames, headers and bodies split across writes,
// several frames in one write.
#include "fuzz/mutator.h"

#include <algorithm>

namespace prism::fuzz {

namespace {

const std::vector<std::string> kBadLengths = {"",
                                              "-1",
                                              "+5",
                                              " 5",
                                              "5 ",
                                              "0x10",
                                              "1e2",
                                              "banana",
                                              "99999999999999999999",
                                              "18446744073709551616",
                                              "4294967296",
                                              "9223372036854775807",
                                              "00012",
                                              "\xd9\xa3",
                                              "5\x00"};
const std::vector<std::string> kHeaderNames = {"Content-Length",  "content-length",  "CONTENT-LENGTH", "Content-length",
                                               "Content-Length ", " Content-Length", "Content_Length", "ContentLength"};
const std::vector<std::string> kExtraHeaders = {"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
                                                "Content-Type: text/plain; charset=latin1\r\n",
                                                "X-Fuzz: 1\r\n",
                                                "no colon here\r\n",
                                                ": empty name\r\n",
                                                "\r\n",
                                                "Content-Length\r\n",
                                                "\xff\xfe: \x80\r\n"};

}  // namespace

std::string Mutator::frame(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

std::string Mutator::mutate_header(const std::string& body, SendPlan& plan) {
  std::string length = std::to_string(body.size());
  std::string name = "Content-Length", sep = ": ", eol = "\r\n", end = "\r\n", extra, prefix;
  switch (below(9)) {
    case 0: {  // off by a little or a lot
      static const std::vector<long> kDeltas = {-1, 1, -2, 7, -100, 1000};
      long value = long(body.size()) + kDeltas[below(kDeltas.size())];
      length = std::to_string(value);
      plan.what = "Content-Length " + length + " for a body of " + std::to_string(body.size());
      if (value > long(body.size())) plan.poisoned = true;
      break;
    }
    case 1:
      length = pick(kBadLengths);
      plan.what = "bad Content-Length value";
      break;
    case 2:  // larger than the limit or than memory: the daemon skips or waits
      length = chance(0.5) ? "67108865" : std::to_string(uint64_t(1) << (33 + below(28)));
      plan.what = "huge Content-Length " + length;
      plan.poisoned = true;
      break;
    case 3:
      name = pick(kHeaderNames);
      plan.what = "header name '" + name + "'";
      break;
    case 4:  // line ends: bare \n, a missing blank line, \r alone
      eol = chance(0.5) ? "\n" : "\r";
      end = chance(0.5) ? "\n" : "";
      plan.what = "odd line ends";
      break;
    case 5: {  // duplicate Content-Length, same or different
      std::string other = chance(0.5) ? length : std::to_string(body.size() / 2);
      extra = name + ": " + other + "\r\n";
      plan.what = "duplicate Content-Length " + other;
      break;
    }
    case 6:  // extra headers, or one over the header limit
      extra = chance(0.8) ? pick(kExtraHeaders) : "X-Long: " + std::string(8192 + below(4096), 'h') + "\r\n";
      plan.what = "extra header";
      break;
    case 7:  // garbage before the frame
      prefix = chance(0.5) ? std::string("Content-Len") : mutate_bytes("garbage\r\n", {}, 4);
      plan.what = "garbage before the header";
      break;
    case 8:
      sep = chance(0.5) ? ":" : " :  ";
      plan.what = "separator '" + sep + "'";
      break;
  }
  plan.regrouped = true;
  std::string header = name + sep + length + eol;
  return prefix + (chance(0.5) ? extra + header : header + extra) + end + body;
}

void Mutator::split_writes(const std::string& bytes, SendPlan& plan) {
  if (bytes.empty()) return;
  std::vector<size_t> cuts = {0};
  if (chance(0.25)) {
    size_t pieces = 1 + below(5);
    for (size_t i = 0; i < pieces; ++i) {
      // Cut inside the header more often than not: that is where a reader gets it wrong.
      size_t at = chance(0.6) ? below(std::min<size_t>(bytes.size(), 40)) : below(bytes.size());
      cuts.push_back(at);
    }
  }
  cuts.push_back(bytes.size());
  std::sort(cuts.begin(), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (cuts[i] == cuts[i + 1]) continue;
    Write w{bytes.substr(cuts[i], cuts[i + 1] - cuts[i]), 0};
    if (i > 0 && chance(0.3)) w.delay_us = 50 + int(below(chance(0.9) ? 300 : 3000));
    plan.writes.push_back(std::move(w));
  }
}

SendPlan Mutator::frame_plan(const std::vector<std::string>& bodies, bool mutate_header) {
  SendPlan plan;
  std::string stream;
  size_t mutated = mutate_header ? below(bodies.size()) : bodies.size();
  for (size_t i = 0; i < bodies.size(); ++i) stream += i == mutated ? this->mutate_header(bodies[i], plan) : frame(bodies[i]);
  if (chance(0.02)) {  // the connection dies in the middle of a frame
    stream.resize(below(stream.size() + 1));
    plan.disconnect = true;
    plan.what += plan.what.empty() ? "truncated frame, then disconnect" : "; truncated, then disconnect";
  }
  split_writes(stream, plan);
  return plan;
}

}  // namespace prism::fuzz

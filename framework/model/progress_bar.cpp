#include "framework/model/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <fmt/format.h>

namespace kestrel {
namespace {

// Keras shows the loss first and validation values last: "loss", the other training logs, then
// "val_loss" and the other validation logs (each group in name order, as Kestrel's logs are sorted).
std::vector<const Logs::value_type*> display_order(const Logs& logs) {
  std::vector<const Logs::value_type*> out;
  for (const bool validation : {false, true}) {
    const std::string loss = validation ? "val_loss" : "loss";
    if (auto found = logs.find(loss); found != logs.end()) out.push_back(&*found);
    for (const auto& entry : logs) {
      if (entry.first.starts_with("val_") == validation && entry.first != loss) out.push_back(&entry);
    }
  }
  return out;
}

std::string format_values(const Logs& logs) {
  std::string out;
  for (const auto* entry : display_order(logs)) {
    const double v = entry->second;
    out += " - " + entry->first + ": " + (std::abs(v) > 1e-3 ? fmt::format("{:.4f}", v) : fmt::format("{:.4e}", v));
  }
  return out;
}

// " 10ms/step", " 2s/epoch", " 350us/step".
std::string format_time(double seconds, const char* unit) {
  if (seconds >= 1.0 || seconds == 0.0) return fmt::format(" {:.0f}s/{}", seconds, unit);
  if (seconds >= 1e-3) return fmt::format(" {:.0f}ms/{}", seconds * 1e3, unit);
  return fmt::format(" {:.0f}us/{}", seconds * 1e6, unit);
}

std::string format_eta(double eta) {
  const auto whole = static_cast<std::int64_t>(eta);
  if (eta > 3600) return fmt::format("{}:{:02d}:{:02d}", whole / 3600, (whole % 3600) / 60, whole % 60);
  if (eta > 60) return fmt::format("{}:{:02d}", whole / 60, whole % 60);
  return fmt::format("{}s", whole);
}

// "187/469" with the count right-aligned to the width of the target.
std::string format_count(std::int64_t current, std::int64_t target) {
  const auto digits = static_cast<int>(std::to_string(target).size());
  return fmt::format("{:>{}}/{}", current, digits, target);
}

}  // namespace

ProgressBar::ProgressBar(ProgressBarOptions options) : options_(std::move(options)) {
  if (options_.terminal) {
    terminal_ = *options_.terminal;
  } else {
    terminal_ = options_.out == nullptr && isatty(fileno(stdout)) != 0;
  }
}

double ProgressBar::now() const {
  if (options_.clock) return options_.clock();
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void ProgressBar::write(const std::string& text) {
  std::ostream& out = options_.out != nullptr ? *options_.out : std::cout;
  out << text << std::flush;
}

void ProgressBar::start() {
  target_ = options_.steps;
  seen_ = 0;
  start_time_ = now();
  last_draw_.reset();
  time_after_first_step_.reset();
  prev_width_ = 0;
}

double ProgressBar::step_duration(std::int64_t current, double t) {
  if (current <= 0) return 0.0;
  // The first step (compilation, warm caches) is not representative: time the rest when possible.
  const double per_step = time_after_first_step_ && current > 1
                              ? (t - *time_after_first_step_) / static_cast<double>(current - 1)
                              : (t - start_time_) / static_cast<double>(current);
  if (current == 1) time_after_first_step_ = t;
  return per_step;
}

void ProgressBar::update(std::int64_t current, const Logs& logs, bool finalize) {
  seen_ = current;
  const double t = now();
  const double per_step = step_duration(current, t);
  const double elapsed = t - start_time_;

  if (options_.verbose == 2) {
    if (!finalize || target_ <= 0) return;
    write(format_count(current, target_) + fmt::format(" - {:.0f}s", elapsed) + format_values(logs) + " -" +
          format_time(elapsed, "epoch") + " -" + format_time(elapsed / static_cast<double>(target_), "step") +
          (options_.note ? options_.note() : "") + "\n");
    return;
  }
  if (options_.verbose != 1) return;
  if (!finalize && (!terminal_ || (last_draw_ && t - *last_draw_ < options_.interval))) return;

  std::string bar;
  if (target_ > 0) {
    bar = format_count(current, target_) + " [";
    const auto filled = static_cast<int>(options_.width * static_cast<double>(current) / static_cast<double>(target_));
    if (filled > 0) {
      bar += std::string(static_cast<std::size_t>(filled - 1), '=');
      bar += current < target_ ? '>' : '=';
    }
    bar += std::string(static_cast<std::size_t>(std::max(0, options_.width - filled)), '.');
    bar += "]";
  } else {
    bar = fmt::format("{:7d}/Unknown", current);
  }
  std::string info = finalize || target_ <= 0
                         ? fmt::format(" - {:.0f}s", elapsed) + format_time(per_step, "step")
                         : " - ETA: " + format_eta(per_step * static_cast<double>(target_ - current));
  info += format_values(logs);
  if (finalize && options_.note) info += options_.note();

  const std::size_t width = bar.size() + info.size();
  std::string message = terminal_ ? "\r" : "";
  message += bar + info;
  // Blank out what is left of a longer previous line.
  if (terminal_ && prev_width_ > width) message += std::string(prev_width_ - width, ' ');
  if (finalize) message += "\n";
  write(message);
  prev_width_ = width;
  last_draw_ = t;
}

void ProgressBar::finish(const Logs& logs) {
  if (target_ <= 0) target_ = seen_;  // an unknown length is known at the end
  update(target_, logs, /*finalize=*/true);
}

void ProgressBar::on_train_begin(const Logs& logs) { in_fit_ = true; }

void ProgressBar::on_train_end(const Logs& logs) { in_fit_ = false; }

void ProgressBar::on_epoch_begin(int epoch, const Logs& logs) {
  start();
  if (options_.verbose > 0 && options_.epochs > 1) write(fmt::format("Epoch {}/{}\n", epoch + 1, options_.epochs));
}

void ProgressBar::on_epoch_end(int epoch, const Logs& logs) { finish(logs); }

void ProgressBar::on_train_batch_end(std::int64_t batch, const Logs& logs) { update(batch + 1, logs, false); }

void ProgressBar::on_test_begin(const Logs& logs) {
  if (!in_fit_) start();
}

void ProgressBar::on_test_batch_end(std::int64_t batch, const Logs& logs) {
  if (!in_fit_) update(batch + 1, logs, false);
}

void ProgressBar::on_test_end(const Logs& logs) {
  if (!in_fit_) finish(logs);
}

void ProgressBar::on_predict_begin(const Logs& logs) { start(); }

void ProgressBar::on_predict_batch_end(std::int64_t batch, const Logs& logs) { update(batch + 1, {}, false); }

void ProgressBar::on_predict_end(const Logs& logs) { finish({}); }

}  // namespace kestrel

/*
 * edr_pack.hpp: a header-only C++17 wrapper of libedrpack (edr_pack.h).
 * Reference: docs/sdk.md, "C++".
 *
 *   edr::reader r("dump.pack");                       // pack or MCAP
 *   for (const edr::message &m : r.messages({{"vehicle/speed", "camera/front"}, {}, t0, t1}))
 *       use(m.topic(), m.time_ns(), m.type().schema_name(), m.data());
 *
 *   edr::writer w("out.pack", {EDR_COMPRESS_ZSTD});
 *   auto speed = w.topic<Speed>("vehicle/speed", "", "vehicle.Speed", "f32le v (m/s); u8 gear; pad 3");
 *   speed.write(Speed{12.5f, 3, {}}, t);             // typed: the layout's size is sizeof(Speed)
 *
 * Handles are RAII (reader, writer: move-only, closed by their
 * destructors; a writer's close can fail: call close() to see it).
 * Failures throw edr::error (the EDR_E* code, the library's message with
 * path and offset, the offset). A message, and everything it points to,
 * is valid until the range's next step (as a C view until the next call).
 * A reader is used by one thread at a time; one range at a time: starting
 * another range on a reader ends the first (its next step throws).
 */
#ifndef EDR_PACK_HPP
#define EDR_PACK_HPP

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "edr_pack.h"

namespace edr {

/* A libedrpack failure. */
class error : public std::runtime_error {
public:
	error(int code, const std::string &what, std::int64_t offset = -1)
	    : std::runtime_error(what + " (" + name(code) + ")"), code_(code), offset_(offset) {}
	int code() const noexcept { return code_; }
	/* The byte offset of the damage behind it, -1 when none. */
	std::int64_t offset() const noexcept { return offset_; }
	static std::string name(int code) {
		switch (code) {
		case EDR_EINVAL: return "EDR_EINVAL";
		case EDR_EBADHANDLE: return "EDR_EBADHANDLE";
		case EDR_EIO: return "EDR_EIO";
		case EDR_ECORRUPT: return "EDR_ECORRUPT";
		case EDR_EFORMAT: return "EDR_EFORMAT";
		case EDR_ENOTSUP: return "EDR_ENOTSUP";
		case EDR_EBUSY: return "EDR_EBUSY";
		case EDR_ENOMATCH: return "EDR_ENOMATCH";
		}
		return "EDR_E" + std::to_string(code);
	}

private:
	int code_;
	std::int64_t offset_;
};

namespace detail {
/* check throws for rc < 0 with handle h's message (0: the thread's). */
inline int check(int rc, std::uint64_t h) {
	if (rc < 0) {
		throw error(rc, edr_last_error(h), edr_error_offset(h));
	}
	return rc;
}
struct freer {
	void operator()(void *p) const noexcept { edr_free(p); }
};
} // namespace detail

/* A run of bytes (borrowed). */
struct bytes {
	const std::uint8_t *ptr = nullptr;
	std::size_t len = 0;
	const std::uint8_t *data() const noexcept { return ptr; }
	std::size_t size() const noexcept { return len; }
	bool empty() const noexcept { return len == 0; }
	const std::uint8_t *begin() const noexcept { return ptr; }
	const std::uint8_t *end() const noexcept { return ptr + len; }
	std::string_view str() const noexcept { return {reinterpret_cast<const char *>(ptr), len}; }
};

/* A topic's type (borrowed from the reader until it closes). */
class type_view {
public:
	type_view() = default;
	explicit type_view(const edr_type *t) : t_(t) {}
	std::string_view message_encoding() const { return t_ ? t_->message_encoding : ""; }
	std::string_view schema_name() const { return t_ ? t_->schema_name : ""; }
	std::string_view schema_encoding() const { return t_ ? t_->schema_encoding : ""; }
	bytes schema() const { return t_ ? bytes{t_->schema_data, t_->schema_len} : bytes{}; }
	const edr_type *c() const noexcept { return t_; }
	/* Two messages of the same type share it. */
	bool operator==(const type_view &o) const noexcept { return t_ == o.t_; }
	bool operator!=(const type_view &o) const noexcept { return t_ != o.t_; }

private:
	const edr_type *t_ = nullptr;
};

/* A type to write: owns its strings. */
struct type {
	std::string message_encoding; /* "" : raw bytes (x-edr-raw) */
	std::string schema_name;
	std::string schema_encoding;
	std::string schema; /* the schema's bytes */
	static type packed(std::string name, std::string layout) {
		return {"x-edr-packed", std::move(name), "x-edr-layout", std::move(layout)};
	}
	static type json(std::string name, std::string json_schema = "") {
		std::string enc = json_schema.empty() ? "" : "jsonschema";
		return {"json", std::move(name), std::move(enc), std::move(json_schema)};
	}
	static type raw(std::string name = "") { return {"x-edr-raw", std::move(name), "", ""}; }
	edr_type c() const noexcept {
		return {message_encoding.c_str(), schema_name.c_str(), schema_encoding.c_str(),
		        reinterpret_cast<const std::uint8_t *>(schema.data()), schema.size()};
	}
};

/* The record a packed layout describes: its size (edr_layout_json). */
inline std::size_t layout_size(const type &t) {
	edr_type ct = t.c();
	char *json = nullptr;
	detail::check(edr_layout_json(&ct, &json), 0);
	std::unique_ptr<char, detail::freer> own(json);
	const char *p = std::strstr(json, "\"size\":");
	if (p == nullptr) {
		throw error(EDR_EINVAL, "edr_layout_json: no size in " + std::string(json));
	}
	return static_cast<std::size_t>(std::strtoull(p + 7, nullptr, 10));
}

/* One message (borrowed: valid until the range's next step). */
class message {
public:
	explicit message(const edr_message *m) : m_(m) {}
	std::string_view name() const { return {m_->name, m_->name_len}; }
	std::string_view channel() const { return {m_->channel, m_->channel_len}; }
	/* "name", or "name#channel" when it has a channel (as edr-lite cat prints it). */
	std::string topic() const {
		std::string t(name());
		if (m_->channel_len > 0) {
			t.append("#").append(channel());
		}
		return t;
	}
	std::int64_t time_ns() const noexcept { return m_->time_ns; }
	std::int64_t gen_ts() const noexcept { return m_->gen_ts; }
	std::int64_t done_ts() const noexcept { return m_->done_ts; }
	bytes data() const noexcept { return {m_->data, m_->data_len}; }
	bytes meta() const noexcept { return {m_->meta, m_->meta_len}; }
	type_view type() const noexcept { return type_view(m_->type); }
	std::optional<std::uint64_t> seq() const noexcept {
		return m_->has_seq ? std::optional<std::uint64_t>(m_->seq) : std::nullopt;
	}
	/* The payload as a T (a packed struct), copied; throws when it is shorter. */
	template <class T> T as() const {
		static_assert(std::is_trivially_copyable_v<T>, "as<T>: T must be trivially copyable");
		if (m_->data_len < sizeof(T)) {
			throw error(EDR_EINVAL, topic() + ": a message of " + std::to_string(m_->data_len) + " bytes, a " +
			                            std::to_string(sizeof(T)) + "-byte record asked");
		}
		T v;
		std::memcpy(&v, m_->data, sizeof(T));
		return v;
	}
	const edr_message *c() const noexcept { return m_; }

private:
	const edr_message *m_;
};

/* Which messages a range yields: topics and exclusions are globs as
 * `edr-lite cat --topics` takes them; the window is inclusive. */
struct filter {
	std::vector<std::string> topics;  /* none: every topic */
	std::vector<std::string> exclude;
	std::optional<std::int64_t> start_ns, end_ns;
};

struct topic_info {
	std::string name, channel, topic; /* topic: "name" or "name#channel" */
	::edr::type type;                 /* its first type */
	std::size_t n_types = 1;
	std::uint64_t messages = 0;
};

struct attachment {
	std::string name, media_type;
	std::int64_t log_ns = 0, create_ns = 0;
	std::string data;
};

/* A dump open for reading (pack or MCAP; edr_pack_open_read_with). */
class reader {
public:
	explicit reader(const std::string &path, bool skip_damaged = false) {
		edr_read_options o{skip_damaged ? 1 : 0, 0};
		detail::check(edr_pack_open_read_with(path.c_str(), &o, &h_), 0);
	}
	reader(reader &&o) noexcept : h_(std::exchange(o.h_, 0)), gen_(o.gen_) {}
	reader &operator=(reader &&o) noexcept {
		if (this != &o) {
			close();
			h_ = std::exchange(o.h_, 0);
			gen_ = o.gen_;
		}
		return *this;
	}
	reader(const reader &) = delete;
	reader &operator=(const reader &) = delete;
	~reader() { close(); }
	void close() noexcept {
		if (h_ != 0) {
			edr_pack_close(std::exchange(h_, 0));
		}
	}
	edr_pack handle() const noexcept { return h_; }

	std::vector<topic_info> topics() const {
		edr_topic *ts = nullptr;
		std::size_t n = 0;
		detail::check(edr_pack_topics(h_, &ts, &n), h_);
		std::unique_ptr<edr_topic, detail::freer> own(ts);
		std::vector<topic_info> out;
		for (std::size_t i = 0; i < n; i++) {
			const edr_topic &t = ts[i];
			topic_info ti{t.name, t.channel, t.name, {}, t.n_types, t.messages};
			if (t.channel[0] != 0) {
				ti.topic.append("#").append(t.channel);
			}
			ti.type = {t.first_type.message_encoding, t.first_type.schema_name, t.first_type.schema_encoding,
			           std::string(reinterpret_cast<const char *>(t.first_type.schema_data), t.first_type.schema_len)};
			out.push_back(std::move(ti));
		}
		return out;
	}

	std::vector<attachment> attachments() const {
		edr_attachment *as = nullptr;
		std::size_t n = 0;
		detail::check(edr_pack_attachments(h_, &as, &n), h_);
		std::unique_ptr<edr_attachment, detail::freer> own(as);
		std::vector<attachment> out;
		for (std::size_t i = 0; i < n; i++) {
			out.push_back({as[i].name, as[i].media_type, as[i].log_ns, as[i].create_ns,
			               std::string(reinterpret_cast<const char *>(as[i].data), as[i].len)});
		}
		return out;
	}

	edr_skipped skipped() const {
		edr_skipped s{};
		detail::check(edr_pack_skipped(h_, &s), h_);
		return s;
	}

	/* The messages the filter selects, from its start, as a range. */
	class range;
	range messages(filter f = {});

	/* The payloads of the messages of f (one topic, a packed T) as Ts. */
	template <class T> std::vector<T> records(const filter &f) {
		static_assert(std::is_trivially_copyable_v<T>, "records<T>: T must be trivially copyable");
		set_filter(f);
		gen_++;
		std::vector<T> out(64);
		std::size_t have = 0;
		for (;;) {
			std::size_t n = 0;
			int rc = detail::check(edr_pack_read_records(h_, out.data() + have, sizeof(T), out.size() - have, nullptr, &n), h_);
			have += n;
			if (rc == EDR_EOF) {
				break;
			}
			out.resize(out.size() * 2);
		}
		out.resize(have);
		return out;
	}

private:
	void set_filter(const filter &f) {
		std::vector<const char *> inc, exc;
		for (const auto &s : f.topics) {
			inc.push_back(s.c_str());
		}
		for (const auto &s : f.exclude) {
			exc.push_back(s.c_str());
		}
		edr_filter cf{inc.data(), inc.size(), exc.data(), exc.size(), f.start_ns.value_or(0), f.end_ns.value_or(0), 0, 0};
		cf.flags = (f.start_ns ? EDR_FILTER_START : 0) | (f.end_ns ? EDR_FILTER_END : 0);
		detail::check(edr_pack_set_filter(h_, &cf), h_);
	}

	edr_pack h_ = 0;
	std::uint64_t gen_ = 0; /* counts the ranges started: an older range's step throws */
};

/* A range over a reader's messages (range-for). One pass. */
class reader::range {
public:
	class iterator {
	public:
		using iterator_category = std::input_iterator_tag;
		using value_type = message;
		using difference_type = std::ptrdiff_t;
		using pointer = const message *;
		using reference = const message &;

		iterator() = default;
		const message &operator*() const { return msg_; }
		const message *operator->() const { return &msg_; }
		iterator &operator++() {
			next();
			return *this;
		}
		bool operator==(const iterator &o) const noexcept { return r_ == o.r_; }
		bool operator!=(const iterator &o) const noexcept { return r_ != o.r_; }

	private:
		friend class range;
		iterator(reader *r, std::uint64_t gen) : r_(r), gen_(gen) { next(); }
		void next() {
			if (r_->gen_ != gen_) {
				throw error(EDR_EINVAL, "edr::reader: another range was started on this reader: one range at a time");
			}
			while (++i_ >= v_.n_messages) {
				int rc = detail::check(edr_pack_read_frame(r_->h_, 1, &v_), r_->h_);
				if (rc == EDR_EOF) {
					r_ = nullptr; /* the end */
					return;
				}
				i_ = static_cast<std::size_t>(-1);
			}
			msg_ = message(&v_.messages[i_]);
		}
		reader *r_ = nullptr;
		std::uint64_t gen_ = 0;
		edr_frame_view v_{};
		std::size_t i_ = static_cast<std::size_t>(-1);
		message msg_{nullptr};
	};

	iterator begin() {
		if (started_) {
			throw error(EDR_EINVAL, "edr::reader::range: a range is one pass (call messages() again)");
		}
		started_ = true;
		r_->set_filter(f_);
		return iterator(r_, ++r_->gen_);
	}
	iterator end() { return iterator(); }

private:
	friend class reader;
	range(reader *r, filter f) : r_(r), f_(std::move(f)) {}
	reader *r_;
	filter f_;
	bool started_ = false;
};

inline reader::range reader::messages(filter f) { return range(this, std::move(f)); }

/* How a writer writes (edr_write_options). */
struct write_options {
	int compression = EDR_COMPRESS_NONE; /* EDR_COMPRESS_* */
	std::string writer = "libedrpack (C++)";
	std::int64_t created_ns = 0; /* 0: now */
};

/* A pack file being written (edr_pack_open_write). */
class writer {
public:
	using options = write_options;
	explicit writer(const std::string &path, const write_options &o = write_options()) {
		edr_write_options co{o.compression, 0, o.writer.c_str(), o.created_ns};
		detail::check(edr_pack_open_write(path.c_str(), &co, &h_), 0);
	}
	writer(writer &&o) noexcept : h_(std::exchange(o.h_, 0)) {}
	writer &operator=(writer &&o) noexcept {
		if (this != &o) {
			try {
				close();
			} catch (...) {
			}
			h_ = std::exchange(o.h_, 0);
		}
		return *this;
	}
	writer(const writer &) = delete;
	writer &operator=(const writer &) = delete;
	/* Closes without throwing: call close() to see a failure (the index,
	 * the trailer, fsync). */
	~writer() {
		if (h_ != 0) {
			edr_pack_close(std::exchange(h_, 0));
		}
	}
	void close() {
		if (h_ != 0) {
			detail::check(edr_pack_close(std::exchange(h_, 0)), 0);
		}
	}
	edr_pack handle() const noexcept { return h_; }

	void set_type(const std::string &name, const std::string &channel, const type &t, std::int64_t from_ns = 0) {
		edr_type ct = t.c();
		detail::check(edr_pack_set_topic_type(h_, name.c_str(), channel.c_str(), &ct, from_ns), h_);
	}

	void write(const std::string &name, const std::string &channel, std::int64_t time_ns, const void *data,
	           std::size_t len, std::optional<std::uint64_t> seq = std::nullopt, std::int64_t gen_ts = 0) {
		edr_message m{};
		m.name = name.c_str();
		m.channel = channel.c_str();
		m.data = static_cast<const std::uint8_t *>(data);
		m.data_len = len;
		m.done_ts = time_ns;
		m.gen_ts = gen_ts;
		if (seq) {
			m.has_seq = 1;
			m.seq = *seq;
		}
		detail::check(edr_pack_write_message(h_, &m), h_);
	}
	void write(const std::string &name, const std::string &channel, std::int64_t time_ns, std::string_view data,
	           std::optional<std::uint64_t> seq = std::nullopt) {
		write(name, channel, time_ns, data.data(), data.size(), seq);
	}

	void add_attachment(const attachment &a) {
		edr_attachment ca{a.name.c_str(), a.media_type.c_str(), a.log_ns, a.create_ns,
		                  reinterpret_cast<const std::uint8_t *>(a.data.data()), a.data.size()};
		detail::check(edr_pack_add_attachment(h_, &ca), h_);
	}

	/* A topic whose messages are Ts, packed as layout says: the layout's
	 * record must be sizeof(T) bytes (checked here, so a struct and a
	 * layout that drifted apart fail at once, not in a reader). */
	template <class T> class typed_topic {
	public:
		void write(const T &v, std::int64_t time_ns, std::optional<std::uint64_t> seq = std::nullopt) {
			w_->write(name_, channel_, time_ns, &v, sizeof(T), seq);
		}

	private:
		friend class writer;
		typed_topic(writer *w, std::string name, std::string channel) : w_(w), name_(std::move(name)), channel_(std::move(channel)) {}
		writer *w_;
		std::string name_, channel_;
	};
	template <class T>
	typed_topic<T> topic(const std::string &name, const std::string &channel, const std::string &type_name,
	                     const std::string &layout) {
		static_assert(std::is_trivially_copyable_v<T>, "topic<T>: T must be trivially copyable");
		type t = type::packed(type_name, layout);
		std::size_t size = layout_size(t);
		if (size != sizeof(T)) {
			throw error(EDR_EINVAL, "edr::writer::topic " + name + ": layout " + type_name + " is " + std::to_string(size) +
			                            " bytes, the struct " + std::to_string(sizeof(T)));
		}
		set_type(name, channel, t);
		return typed_topic<T>(this, name, channel);
	}

private:
	edr_pack h_ = 0;
};

} // namespace edr

#endif /* EDR_PACK_HPP */

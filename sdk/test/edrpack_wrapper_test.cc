// The C++ wrapper's side of sdk/sdk_test.go: edr_pack.hpp only (no C call),
// C++17, built with -Wall -Wextra -Werror and AddressSanitizer. Each mode
// prints what the C program's mode of the same name prints, so the Go tests
// compare both with the Go API and the edr-lite binary.
//
//   summary FILE | types FILE | filter FILE FROM TO [TOPIC|!TOPIC...] | typed OUT | skip FILE | misuse FILE
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "edr_pack.hpp"

namespace {

#define EXPECT(cond)                                                                                 \
	do {                                                                                         \
		if (!(cond)) {                                                                       \
			throw std::runtime_error(std::string(__FILE__ ":") + std::to_string(__LINE__) + \
			                         ": expected " #cond);                                       \
		}                                                                                    \
	} while (0)

std::uint64_t fnv1a(std::uint64_t h, const edr::bytes &b) {
	for (std::uint8_t c : b) {
		h = (h ^ c) * 1099511628211ULL;
	}
	return h;
}

constexpr std::uint64_t fnv0 = 14695981039346656037ULL;

// Per topic, in order of first appearance: what summary prints.
struct tally {
	struct topic {
		std::uint64_t messages = 0, bytes = 0, fnv = fnv0;
	};
	std::vector<std::string> order;
	std::map<std::string, topic> topics;
	std::uint64_t messages = 0;
	void add(const edr::message &m) {
		std::string key = m.topic();
		auto it = topics.find(key);
		if (it == topics.end()) {
			order.push_back(key);
			it = topics.emplace(key, topic{}).first;
		}
		it->second.messages++;
		it->second.bytes += m.data().size();
		it->second.fnv = fnv1a(it->second.fnv, m.data());
		messages++;
	}
	void print() const {
		std::printf("frames 0 messages %" PRIu64 "\n", messages);
		for (const auto &k : order) {
			const topic &t = topics.at(k);
			std::printf("topic %s %" PRIu64 " %" PRIu64 " %016" PRIx64 "\n", k.c_str(), t.messages, t.bytes, t.fnv);
		}
	}
};

int summary(const char *path) {
	edr::reader r(path);
	for (const auto &t : r.topics()) {
		std::printf("listed %s %" PRIu64 "\n", t.topic.c_str(), t.messages);
	}
	tally s;
	for (const edr::message &m : r.messages()) {
		s.add(m);
	}
	s.print();
	return 0;
}

void print_type(const char *what, const std::string &topic, std::string_view enc, std::string_view name,
                std::string_view schema_enc, const edr::bytes &schema) {
	std::printf("%s %s enc=%.*s name=%.*s schema=%.*s len=%zu fnv=%016" PRIx64 "\n", what, topic.c_str(),
	            int(enc.size()), enc.data(), int(name.size()), name.data(), int(schema_enc.size()), schema_enc.data(),
	            schema.size(), fnv1a(fnv0, schema));
}

int types(const char *path) {
	edr::reader r(path);
	for (const auto &t : r.topics()) {
		const edr::type &ty = t.type;
		print_type("topic", t.topic, ty.message_encoding, ty.schema_name, ty.schema_encoding,
		           edr::bytes{reinterpret_cast<const std::uint8_t *>(ty.schema.data()), ty.schema.size()});
	}
	std::vector<std::pair<std::string, edr::type_view>> seen;
	for (const edr::message &m : r.messages()) {
		std::pair<std::string, edr::type_view> k{m.topic(), m.type()};
		bool found = false;
		for (const auto &s : seen) {
			found = found || (s.first == k.first && s.second == k.second);
		}
		if (!found) {
			seen.push_back(k);
			edr::type_view t = m.type();
			print_type("message", k.first, t.message_encoding(), t.schema_name(), t.schema_encoding(), t.schema());
		}
	}
	return 0;
}

edr::filter parse_filter(const char *from, const char *to, int argc, char **argv) {
	edr::filter f;
	if (std::strcmp(from, "-") != 0) {
		f.start_ns = std::strtoll(from, nullptr, 10);
	}
	if (std::strcmp(to, "-") != 0) {
		f.end_ns = std::strtoll(to, nullptr, 10);
	}
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '!') {
			f.exclude.push_back(argv[i] + 1);
		} else {
			f.topics.push_back(argv[i]);
		}
	}
	return f;
}

int filter(const char *path, const char *from, const char *to, int argc, char **argv) {
	edr::reader r(path);
	edr::filter f = parse_filter(from, to, argc, argv);
	tally s;
	try {
		for (const edr::message &m : r.messages(f)) {
			EXPECT((!f.start_ns || m.time_ns() >= *f.start_ns) && (!f.end_ns || m.time_ns() <= *f.end_ns));
			s.add(m);
		}
	} catch (const edr::error &e) {
		if (e.code() != EDR_ENOMATCH) {
			throw;
		}
		std::printf("nomatch %d %s\n", e.code(), e.what());
		return 0;
	}
	s.print();
	return 0;
}

#pragma pack(push, 1)
struct state {
	float speed;
	std::uint8_t gear;
	std::uint8_t pad[3];
	std::int16_t wheel[4];
	std::uint64_t t;
};
#pragma pack(pop)
static_assert(sizeof(state) == 24, "state is 24 bytes");

const char *state_layout = "# vehicle.State\nf32le speed (m/s); u8 gear; pad 3; i16le wheel[4] (rpm); u64le t (ns)";

int typed(const char *path) {
	const std::int64_t t0 = 1700000000000000000LL;
	{
		edr::writer w(path, {EDR_COMPRESS_ZSTD, "edrpack_wrapper_test.cc typed", t0});
		auto st = w.topic<state>("vehicle/state", "", "vehicle.State", state_layout);
		w.set_type("note", "driver", edr::type::json("edr.Note", R"({"type":"object","properties":{"text":{"type":"string"}}})"));
		w.set_type("blob", "", edr::type::raw());
		bool refused = false;
		try {
			w.topic<std::uint32_t>("bad", "", "bad", "u16le a"); // 2 bytes, not 4
		} catch (const edr::error &e) {
			refused = e.code() == EDR_EINVAL && std::strstr(e.what(), "2 bytes") != nullptr;
		}
		EXPECT(refused);
		for (int i = 0; i < 50; i++) {
			std::int64_t t = t0 + std::int64_t(i) * 10000000;
			state s{float(i) * 0.5f, std::uint8_t(i % 6), {0, 0, 0}, {std::int16_t(i), std::int16_t(-i), std::int16_t(i * 100), -32768},
			        std::uint64_t(t)};
			st.write(s, t, 1000 + i);
			if (i % 10 == 0) {
				w.write("note", "driver", t + 1, "{\"text\":\"mark " + std::to_string(i) + "\"}");
				w.write("blob", "", t + 2, std::string_view("\x01\x02\x03", 3));
			}
		}
		w.add_attachment({"calibration.yaml", "application/yaml", t0, t0 - 5, "gain: 2.5\n"});
		w.close();
	}
	edr::reader r(path);
	EXPECT(r.topics().size() == 3);
	std::vector<state> rs = r.records<state>({{"vehicle/state"}, {}, t0 + 100000000, t0 + 199999999});
	EXPECT(rs.size() == 10);
	for (std::size_t i = 0; i < rs.size(); i++) {
		int k = 10 + int(i);
		EXPECT(rs[i].speed == float(k) * 0.5f && rs[i].gear == k % 6 && rs[i].wheel[2] == k * 100 && rs[i].t == std::uint64_t(t0 + k * 10000000LL));
	}
	int n = 0;
	for (const edr::message &m : r.messages({{"vehicle/state"}, {}, {}, {}})) {
		EXPECT(m.type().schema_name() == "vehicle.State" && m.seq() && *m.seq() == std::uint64_t(1000 + n) &&
		       m.as<state>().gear == n % 6);
		n++;
	}
	EXPECT(n == 50);
	auto as = r.attachments();
	EXPECT(as.size() == 1 && as[0].name == "calibration.yaml" && as[0].data == "gain: 2.5\n");
	std::printf("typed ok\n");
	return 0;
}

int skip(const char *path) {
	edr::reader r(path, true);
	std::uint64_t n = 0;
	for (const edr::message &m : r.messages()) {
		n += m.data().size() > 0 || true;
	}
	edr_skipped s = r.skipped();
	std::printf("messages %" PRIu64 " skipped regions %" PRIu64 " first %" PRId64 "\n", n, s.regions, s.first_offset);
	edr::reader strict(path);
	try {
		for (const edr::message &m : strict.messages()) {
			(void)m;
		}
		std::printf("strict eof\n");
	} catch (const edr::error &e) {
		std::printf("strict error %d offset %" PRId64 "\n", e.code(), e.offset());
	}
	return 0;
}

int misuse(const char *path) {
	// two ranges on one reader: the first ends, loudly
	edr::reader r(path);
	auto a = r.messages();
	auto it = a.begin();
	auto b = r.messages({{"vehicle/speed"}, {}, {}, {}});
	auto jt = b.begin();
	EXPECT(jt != b.end() && jt->topic() == "vehicle/speed");
	bool threw = false;
	try {
		++it;
	} catch (const edr::error &e) {
		threw = e.code() == EDR_EINVAL && std::strstr(e.what(), "one range at a time") != nullptr;
	}
	EXPECT(threw);
	threw = false;
	try {
		b.begin(); // a range is one pass
	} catch (const edr::error &) {
		threw = true;
	}
	EXPECT(threw);
	// a typo in a topic
	threw = false;
	try {
		for (const edr::message &m : r.messages({{"vehicle/sped"}, {}, {}, {}})) {
			(void)m;
		}
	} catch (const edr::error &e) {
		threw = e.code() == EDR_ENOMATCH && std::strstr(e.what(), "vehicle/speed") != nullptr;
	}
	EXPECT(threw);
	// a missing file, a moved reader
	threw = false;
	try {
		edr::reader missing("/nonexistent/x.pack");
	} catch (const edr::error &e) {
		threw = e.code() == EDR_EIO && std::strstr(e.what(), "/nonexistent/x.pack") != nullptr;
	}
	EXPECT(threw);
	edr::reader moved = std::move(r);
	EXPECT(r.handle() == 0 && moved.handle() != 0);
	std::printf("misuse ok\n");
	return 0;
}

} // namespace

int main(int argc, char **argv) {
	try {
		std::string mode = argc > 1 ? argv[1] : "";
		if (mode == "summary" && argc == 3) {
			return summary(argv[2]);
		}
		if (mode == "types" && argc == 3) {
			return types(argv[2]);
		}
		if (mode == "filter" && argc >= 5) {
			return filter(argv[2], argv[3], argv[4], argc - 5, argv + 5);
		}
		if (mode == "typed" && argc == 3) {
			return typed(argv[2]);
		}
		if (mode == "skip" && argc == 3) {
			return skip(argv[2]);
		}
		if (mode == "misuse" && argc == 3) {
			return misuse(argv[2]);
		}
		std::fprintf(stderr, "usage: %s summary|types|filter|typed|skip|misuse ARGS\n", argv[0]);
		return 2;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "edrpack_wrapper_test: %s\n", e.what());
		return 1;
	}
}

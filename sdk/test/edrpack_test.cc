// The C++ side of sdk/sdk_test.go: the C API from C++17 with RAII (handles
// and owned buffers in std::unique_ptr), reading a dump and printing the
// same per-topic lines as edrpack_test.c's summary mode.
//
//   edrpack_test_cc FILE
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "edr_pack.h"

namespace {

void check(int rc, std::uint64_t h, const char *what) {
	if (rc < 0) {
		throw std::runtime_error(std::string(what) + ": " + edr_last_error(h));
	}
}

// Pack closes its handle (ClosePackFileR / ClosePackFileW).
struct PackCloser {
	void operator()(edr_pack *h) const {
		edr_pack_close(*h);
		delete h;
	}
};
using Pack = std::unique_ptr<edr_pack, PackCloser>;

// Owned buffers go back through edr_free.
struct EdrFree {
	void operator()(void *p) const { edr_free(p); }
};
template <class T> using Owned = std::unique_ptr<T, EdrFree>;

Pack open_read(const char *path) {
	edr_pack h = 0;
	check(edr_pack_open_read(path, &h), 0, path);
	return Pack(new edr_pack(h));
}

struct Topic {
	std::uint64_t messages = 0, bytes = 0, fnv = 14695981039346656037ULL;
};

} // namespace

int main(int argc, char **argv) {
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	try {
		Pack r = open_read(argv[1]);
		std::vector<std::string> order;
		std::map<std::string, Topic> topics;
		std::uint64_t frames = 0, messages = 0;
		edr_frame_view v;
		int rc;
		while ((rc = edr_pack_read_frame(*r, 1, &v)) == EDR_OK) {
			frames++;
			if (frames == 1) { // the frame API on a frame a reader gave
				char **list = nullptr;
				std::size_t n = 0;
				check(edr_frame_topics(v.frame, &list, &n), v.frame, "edr_frame_topics");
				Owned<char *> owned(list);
				if (n == 0) {
					throw std::runtime_error("first frame without topics");
				}
				std::size_t nb = 0;
				std::string first(list[0]);
				std::string name = first.substr(0, first.rfind('#')), channel = first.substr(first.rfind('#') + 1);
				check(edr_frame_block_count(v.frame, name.c_str(), channel.c_str(), &nb), v.frame, "edr_frame_block_count");
				if (nb == 0) {
					throw std::runtime_error("topic " + first + " without blocks");
				}
			}
			for (std::size_t i = 0; i < v.n_messages; i++) {
				const edr_message &m = v.messages[i];
				std::string key(m.name, m.name_len);
				if (m.channel_len > 0) {
					key += "#" + std::string(m.channel, m.channel_len);
				}
				auto it = topics.find(key);
				if (it == topics.end()) {
					order.push_back(key);
					it = topics.emplace(key, Topic{}).first;
				}
				Topic &t = it->second;
				t.messages++;
				t.bytes += m.data_len;
				for (std::size_t k = 0; m.data != nullptr && k < m.data_len; k++) {
					t.fnv = (t.fnv ^ m.data[k]) * 1099511628211ULL;
				}
				messages++;
			}
		}
		check(rc, *r, "edr_pack_read_frame");
		std::printf("frames %" PRIu64 " messages %" PRIu64 "\n", frames, messages);
		for (const auto &k : order) {
			const Topic &t = topics[k];
			std::printf("topic %s %" PRIu64 " %" PRIu64 " %016" PRIx64 "\n", k.c_str(), t.messages, t.bytes, t.fnv);
		}
	} catch (const std::exception &e) {
		std::fprintf(stderr, "edrpack_test_cc: %s\n", e.what());
		return 1;
	}
	return 0;
}

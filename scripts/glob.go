package scripts

// globMatch reports whether topic matches pattern: "*" matches any run of
// characters except '/', "**" any run including '/', "?" one character
// other than '/'; everything else matches itself.
func globMatch(pattern, topic string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			deep := len(pattern) > 1 && pattern[1] == '*'
			rest := pattern[1:]
			if deep {
				rest = pattern[2:]
			}
			for i := 0; i <= len(topic); i++ {
				if globMatch(rest, topic[i:]) {
					return true
				}
				if i < len(topic) && topic[i] == '/' && !deep {
					return false
				}
			}
			return false
		case '?':
			if len(topic) == 0 || topic[0] == '/' {
				return false
			}
		default:
			if len(topic) == 0 || topic[0] != pattern[0] {
				return false
			}
		}
		pattern, topic = pattern[1:], topic[1:]
	}
	return len(topic) == 0
}

// matchAny reports whether topic matches one of the globs.
func matchAny(globs []string, topic string) bool {
	for _, g := range globs {
		if globMatch(g, topic) {
			return true
		}
	}
	return false
}

/* What libcoll.so exports. The library is compiled with hidden visibility and linked with a
 * version script (src/libcoll.map): only the C API and the public C++ classes and functions
 * marked COLL_API are visible to a program, nothing of the library's insides or of the C++
 * standard library it instantiates. */
#ifndef COLL_EXPORT_H_
#define COLL_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define COLL_API __attribute__((visibility("default")))
#else
#define COLL_API
#endif

#endif /* COLL_EXPORT_H_ */

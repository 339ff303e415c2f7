"""Class formats shared by the proxy, the object server and the client.

Every form of class information (the two headers, the three class-file formats, the sysmeta
the object servers store) converts to and from one :class:`ClassMap`.
"""

from swift_dss.formats.classfile import (
    ClassFile,
    Version,
    encode_blocks,
    encode_classmap,
    encode_object,
    encode_ranges,
    parse_classfile,
    read_classfile,
)
from swift_dss.formats.classmap import ClassMap, ClassRange, check_class
from swift_dss.formats.errors import ClassError, ClassLimitError
from swift_dss.formats.headers import (
    CLASS_FILE,
    OBJECT_CLASS,
    OBJECT_FILE,
    RANGE_CLASS,
    classmap_from_headers,
    classmap_to_headers,
    file_flags,
    format_range_class,
    parse_flag,
    parse_object_class,
    parse_range_class,
)
from swift_dss.formats.limits import DEFAULT_LIMITS, SECTOR, Limits
from swift_dss.formats.sysmeta import from_sysmeta, sysmeta_keys, to_sysmeta

__all__ = [
    "CLASS_FILE",
    "DEFAULT_LIMITS",
    "OBJECT_CLASS",
    "OBJECT_FILE",
    "RANGE_CLASS",
    "SECTOR",
    "ClassError",
    "ClassFile",
    "ClassLimitError",
    "ClassMap",
    "ClassRange",
    "Limits",
    "Version",
    "check_class",
    "classmap_from_headers",
    "classmap_to_headers",
    "encode_blocks",
    "encode_classmap",
    "encode_object",
    "encode_ranges",
    "file_flags",
    "format_range_class",
    "from_sysmeta",
    "parse_classfile",
    "parse_flag",
    "parse_object_class",
    "parse_range_class",
    "read_classfile",
    "sysmeta_keys",
    "to_sysmeta",
]
